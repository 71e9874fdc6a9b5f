#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet dra` as the GPU DRA driver of a real 1.34 node (tests/k8s/node.py with kube-scheduler and
kube-controller-manager, no device plugin; docs/reference/dra.md):

  * gpulet publishes the fake DGX A100's pool through the API server: one ResourceSlice owned by the
    Node, 13 devices with NVIDIA's names, attributes and capacities;
  * NVIDIA's DeviceClasses and the CEL selectors of NVIDIA's example claims (gpu-test6's productName
    and index, gpu-test4's MIG profiles with a parentUUID constraint, version and quantity
    comparisons) are allocated by the real scheduler to the devices they name — by a ResourceClaim and
    by a ResourceClaimTemplate (the resourceclaim controller makes its claim);
  * kubelet calls gpulet's NodePrepareResources, gpulet GETs each claim and writes one CDI spec per
    claim, and each container sees exactly its GPU's device nodes (the host's majors and minors), the
    driver's libraries and control nodes, and a MIG claim its caps nodes;
  * `gpulet exporter --kubernetes-enable-dra` reads the real kubelet's PodResources and shows each claim's
    pod on the series of the devices allocated to it (dcgm-exporter's dra_* labels);
  * two pods sharing one claim get the same devices, prepared once;
  * deleting the pods unprepares the claims: their specs are gone.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dralib import (DRIVER, FAKE_NVML_LIB, GPULET, KIND, NODE_NAME, Node, allocated_devices, apply, check,  # noqa: E402
                    check_sees, claim, claim_of, delete_pod, log_count, pod, pool, probe, read_spec, request,
                    setup_classes, slices, spec_path, start_dra, template, timed, wait_running)

ATTR = "device.attributes['gpu.nvidia.com']"
CLAIMS = {
    # gpu-test6: productName.lowerAscii().matches(...) && index == N
    "a100-index-2": (claim("a100-index-2", [request("gpu", cel=ATTR + ".productName.lowerAscii().matches('^.*a100.*$') && "
                                                    + ATTR + ".index == 2")]),
                     lambda devs: devs == ["gpu-2"], 0),
    # gpu-test4: MIG profiles from one parent
    "mig-pair": (claim("mig-pair", [request("mig-1g", "mig.nvidia.com", ATTR + ".profile == '1g.5gb'"),
                                    request("mig-2g", "mig.nvidia.com", ATTR + ".profile == '2g.10gb'")],
                       [{"requests": [], "matchAttribute": "gpu.nvidia.com/parentUUID"}]),
                 lambda devs: len(devs) == 2 and devs[0].split("-mig-")[0] == devs[1].split("-mig-")[0]
                 and "-mig-1g5gb-19-" in devs[0] and "-mig-2g10gb-14-" in devs[1], 4),
}
# versions and capacity, typed as NVIDIA types them (semver, quantity), through a template
TYPED = template("typed", [request("gpu", cel=ATTR + ".cudaComputeCapability.isGreaterThan(semver('7.5.0')) && "
                                   + ATTR + ".driverVersion.compareTo(semver('550.0.0')) >= 0 && "
                                   + ATTR + ".architecture == 'Ampere' && "
                                   "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0 && "
                                   + ATTR + ".minor == 5")])


def node_spec(node):
    """The node's full CDI spec (gpulet cdi generate, as the claims' specs are cut from it): its
    common edits are what the probe looks for inside every container."""
    import subprocess
    out = subprocess.run([GPULET, "cdi", "generate", "--root", node.root, "--driver-root", node.root,
                          "--nvml-library", FAKE_NVML_LIB, "--nvidia-cdi-hook-path", node.hook, "--format", "json"],
                         env=node.plugin_env(), capture_output=True, text=True, check=True).stdout
    return json.loads(out)


EXPORTER_ADDR = "127.0.0.1:19401"


def dra_holders(body):
    """{(pod, dra_device_name): labels} from the DCGM series that carry a pod (a MIG instance has no GPU_UTIL)."""
    out = {}
    for line in body.splitlines():
        if line.startswith("DCGM_FI_DEV_"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
            if labels.get("pod"):
                out[(labels["pod"], labels.get("dra_device_name"))] = labels
    return out


def check_exporter(node, claims):
    """`gpulet exporter` reads the real kubelet's PodResources, whose dynamic_resources (KubeletPodResourcesDynamicResources,
    on by default in 1.34) name each claim's devices by driver, pool and device name: every allocated device shows its
    pod, and the series is the device the ResourceSlice names by that device name (its uuid, a MIG device's parent's)."""
    import subprocess
    node.spawn("exporter", [GPULET, "exporter", "--address", EXPORTER_ADDR, "--nvml-library", FAKE_NVML_LIB,
                            "--root", "/", "--collect-interval", "500", "--pod-resources-interval", "500",
                            "--kubernetes=true", "--kubernetes-enable-dra"],
               env=dict(node.plugin_env(), NODE_NAME=NODE_NAME))
    want = {("p-" + name, d): c for name, c in claims.items() for d in allocated_devices(c)}
    last = {}

    def seen():
        p = subprocess.run(node.ns(["/bin/busybox", "wget", "-q", "-O", "-", "http://%s/metrics" % EXPORTER_ADDR]),
                           capture_output=True, text=True, timeout=20)
        last["body"] = p.stdout
        got = dra_holders(p.stdout) if p.returncode == 0 else {}
        return got if set(want) <= set(got) else None
    try:
        got = node.wait("the exporter to attribute every claim's devices", seen, timeout=60, proc="exporter")
    except Exception:
        print("last scrape:\n%s" % "\n".join(x for x in last.get("body", "").splitlines() if "FB_USED{" in x))
        raise
    devs = pool(node)
    for (pod_name, dev), c in want.items():
        labels, attrs = got[(pod_name, dev)], devs[dev]["attributes"]
        uuid = attrs.get("parentUUID", attrs["uuid"])["string"]
        check(labels["UUID"] == uuid and labels["namespace"] == "default" and labels["container"] == "c" and
              labels["dra_claim_name"] == c["metadata"]["name"] and labels["dra_claim_namespace"] == "default" and
              labels["dra_driver_name"] == DRIVER and labels["dra_pool_name"] == NODE_NAME,
              "%s on %s: %s (slice: %s)" % (pod_name, dev, labels, attrs))
        check(("-mig-" in dev) == ("GPU_I_ID" in labels), "%s: MIG series %s" % (dev, labels))
    check("DRA claims attributed" in node.log_tail("exporter") and "pool=%s" % NODE_NAME in node.log_tail("exporter"),
          "the exporter names the pool it matches: %s" % node.log_tail("exporter")[-2000:])
    others = [k for k in got if k not in want]
    check(not others, "series attributed to no claim of ours: %s" % others)
    print("PASS exporter attributes DRA claims: %s" % sorted(want))


def main():
    t0 = time.time()
    with Node() as node:
        node.start(control_plane=True, plugin=False)
        timed("node with kube-scheduler and kube-controller-manager up", t0)

        t = time.time()
        start_dra(node)
        s = slices(node)
        uid = node.get("node", NODE_NAME)["metadata"]["uid"]
        check(len(s) == 1 and len(s[0]["spec"]["devices"]) == 13, "slices: %s" % s)
        owner = s[0]["metadata"]["ownerReferences"][0]
        check(owner["kind"] == "Node" and owner["name"] == NODE_NAME and owner["uid"] == uid and owner["controller"],
              "owner: %s" % owner)
        check(s[0]["spec"]["pool"]["name"] == NODE_NAME and s[0]["spec"]["nodeName"] == NODE_NAME and
              s[0]["metadata"]["name"].startswith(NODE_NAME + "-" + DRIVER + "-"), "pool: %s" % s[0]["spec"]["pool"])
        devs = pool(node)
        check(devs["gpu-0"]["attributes"]["productName"]["string"] == "NVIDIA A100-SXM4-40GB" and
              devs["gpu-0"]["capacity"]["memory"]["value"] == "40Gi", "gpu-0: %s" % devs["gpu-0"])
        timed("gpulet dra registered and published its pool (13 devices, owned by the Node)", t)

        t = time.time()
        setup_classes(node)
        script = probe(node_spec(node))
        apply(node, *(c for c, _, _ in CLAIMS.values()), TYPED)
        for name in CLAIMS:
            apply(node, pod("p-" + name, script, claim_name=name))
        apply(node, pod("p-typed", script, template_name="typed"))
        want = {name: (w, caps) for name, (_, w, caps) in CLAIMS.items()}
        want["typed"] = (lambda d: d == ["gpu-5"], 0)
        claims = {}
        for name, (ok, _) in want.items():
            c = node.wait("claim of p-%s allocated" % name,
                          lambda name=name: (lambda c: c.get("status", {}).get("allocation") and c)(claim_of(node, "p-" + name)),
                          timeout=60, proc="kube-scheduler")
            got = allocated_devices(c)
            check(all(r["driver"] == DRIVER and r["pool"] == NODE_NAME for r in c["status"]["allocation"]["devices"]["results"]),
                  "%s: %s" % (name, c["status"]))
            check(ok(got), "%s allocated %s" % (name, got))
            claims[name] = c
        timed("NVIDIA's example selectors allocated by the real scheduler (claims and a template)", t)

        t = time.time()
        for name, c in claims.items():
            log = wait_running(node, "p-" + name)
            sp = read_spec(node, c["metadata"]["uid"])
            check(sp["kind"] == KIND and [d["name"] for d in sp["devices"]] ==
                  ["%s-%s" % (c["metadata"]["uid"], d) for d in allocated_devices(c)],
                  "%s: spec devices %s" % (name, [d["name"] for d in sp["devices"]]))
            check_sees(node, "p-" + name, sp, want_devices=1, want_caps=want[name][1], log=log)
        timed("each container sees exactly its claim's device nodes, libraries and (MIG) caps nodes", t)

        t = time.time()
        check_exporter(node, claims)
        timed("gpulet exporter attributes each claim's GPUs and MIG devices to its pod (kubelet's PodResources)", t)

        t = time.time()
        apply(node, claim("shared", [request("gpu", cel=ATTR + ".index == 3")]))
        prepared = log_count(node, "dra", "Prepared claim")
        apply(node, pod("s-1", "ls /dev | grep '^nvidia[0-9]'", claim_name="shared"),
              pod("s-2", "ls /dev | grep '^nvidia[0-9]'", claim_name="shared"))
        a, b = wait_running(node, "s-1"), wait_running(node, "s-2")
        check(a.split("PROBE-DONE")[0].split() == b.split("PROBE-DONE")[0].split() == ["nvidia3"],
              "two pods sharing one claim see %r and %r" % (a, b))
        check(log_count(node, "dra", "Prepared claim") == prepared + 1, "the shared claim was prepared more than once")
        # where a slow prepare spent its time, in its log line: the claim's GET, then the rest
        line = [x for x in node.log_tail("dra", 10 ** 8).splitlines() if "Prepared claim" in x][-1]
        check(re.search(r"claim=default/shared .* get_ms=\d+ prepare_ms=\d+", line), "prepare's log: %s" % line)
        timed("two pods sharing one claim see the same GPU, prepared once", t)

        t = time.time()
        uids = [c["metadata"]["uid"] for c in claims.values()] + [node.get("resourceclaim", "shared")["metadata"]["uid"]]
        for n in ["p-" + n for n in claims] + ["s-1", "s-2"]:
            delete_pod(node, n, wait=False)
        node.wait("every claim's spec removed", lambda: not any(os.path.exists(spec_path(node, u)) for u in uids),
                  timeout=60, proc="dra")
        check("Unprepared claim" in node.log_tail("dra", 10 ** 8), "unprepare logged")
        timed("pod deletion unprepares: the claims' specs are removed", t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
