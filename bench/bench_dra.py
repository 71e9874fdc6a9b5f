#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet dra` on the real test node (tests/k8s/node.py: kube-apiserver, scheduler, controller-manager,
kubelet 1.34, containerd 2; issue 33 item 8). Prints, asserts nothing; every figure against a floor
measured in the same run:

  1. NodePrepareResources of a claim of 1 and of 8 GPUs (fake DGX H100): the claim GET from the API
     server, the claim's CDI spec generated and written, the checkpoint written — p50/p99 over N calls
     (each followed by an unmeasured Unprepare), against a NodePrepareResources of no claim on the
     same socket (the gRPC round trip, the floor); an MPS claim too when NVIDIA's real control daemon
     is there (build/realdriver): what one claim's prepare can hold the gRPC thread for.
  2. Pod created -> container running, one pod at a time on the same node in one run: a pod asking for
     nvidia.com/gpu from the device plugin (the floor), then, after the device plugin handed the node
     to gpulet dra, a pod with a ResourceClaimTemplate (the controller makes the claim, the scheduler
     allocates it, kubelet has gpulet prepare it). The DRA pod's part the scheduler's allocation takes
     (pod created -> its claim allocated, less the same step of the plugin's pod: created -> bound) is
     printed beside the difference, which it should cover. The container's start is its own reading of
     /proc/uptime; the steps before are when a watch (kubectl get -w) saw each change.
  3. MIG re-partition (fake DGX A100, GPU 6 from four instances to one): ResourceSlice writes made and
     the time from the fixture rewritten to the new instance in the API server, against the floor of
     one write.

usage: bench/bench_dra.py [N=30] [PODS=5]   (env GPULET_BUILD; BENCH_DRA_ONLY=prepare|pods: one part)"""
import json
import os
import statistics
import subprocess
import sys
import threading
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "k8s"))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from dralib import (BUILD, BUSYBOX_IMAGE, NODE_NAME, Node, apply, claim, log_count, pool, request,  # noqa: E402
                    setup_classes, start_dra, template)
import dra_standin as kubelet  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 30
PODS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
DRIVER = "gpu.nvidia.com"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def ms(xs):
    return "p50 %7.2f ms  p99 %7.2f ms" % (pct(xs, 50) * 1000, pct(xs, 99) * 1000)


def allocated_claim(node, name, devices, config=None):
    """A ResourceClaim allocated by hand (no pod: kubelet never asks for it, the bench does)."""
    reqs = [request("g%d" % i, cel="device.attributes['gpu.nvidia.com'].minor == %d" % i) for i in range(len(devices))]
    apply(node, claim(name, reqs, config=config))
    status = {"allocation": {"devices": {"results": [{"request": "g%d" % i, "driver": DRIVER, "pool": NODE_NAME,
                                                       "device": d} for i, d in enumerate(devices)]}}}
    if config:
        status["allocation"]["devices"]["config"] = [dict(c, source="FromClaim") for c in config]
    node.kubectl("patch", "resourceclaim", name, "--subresource", "status", "--type", "merge", "-p",
                 json.dumps({"status": status}))
    return node.get("resourceclaim", name)["metadata"]["uid"]


def api_requests(node, resources=("resourceclaims", "resourceslices")):
    """The API server's own count of requests on resources so far (apiserver_request_total), by verb."""
    out = {}
    for line in node.kubectl("get", "--raw", "/metrics")[1].splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(kv.split("=", 1) for kv in line[line.index("{") + 1:line.rindex("}")].replace('"', "").split(","))
        if labels.get("resource") in resources:
            verb = labels["verb"] + ("/" + labels["subresource"] if labels.get("subresource") else "")
            out[verb] = out.get(verb, 0) + float(line.rsplit(" ", 1)[1])
    return out


def log_split(node, claim_name=""):
    """Median get_ms and prepare_ms of gpulet's "Prepared claim" lines (of one claim, or all)."""
    rows = [line for line in node.log_tail("dra", 10 ** 8).splitlines()
            if "Prepared claim" in line and "claim=" + claim_name in line]
    field = lambda k: statistics.median(int(x.split(k + "=")[1].split()[0]) for x in rows)  # noqa: E731
    return field("get_ms"), field("prepare_ms")


def per_call(before, after, n):
    return {v: (after[v] - before.get(v, 0)) / n for v in after if after[v] > before.get(v, 0)}


def prepare_latency(node, sock):
    print("\n1. NodePrepareResources on dra.sock (N=%d each)" % N)
    floor = []
    for _ in range(N):
        t = time.perf_counter()
        kubelet.prepare(sock, "v1", [])
        floor.append(time.perf_counter() - t)
    print("   no claim (floor: the gRPC round trip)   %s" % ms(floor))
    claims = {"1 GPU": ("one", ["gpu-0"]), "8 GPUs": ("eight", ["gpu-%d" % i for i in range(8)])}
    results = {}
    for what, (name, devs) in claims.items():
        uid = allocated_claim(node, name, devs)
        ref = [{"namespace": "default", "name": name, "uid": uid}]
        lat = []
        api = api_requests(node)
        for _ in range(N):
            t = time.perf_counter()
            r = kubelet.prepare(sock, "v1", ref)
            lat.append(time.perf_counter() - t)
            if r[uid]["error"]:
                raise SystemExit("prepare %s: %s" % (name, r[uid]["error"]))
            kubelet.unprepare(sock, "v1", ref)
        api = per_call(api, api_requests(node), N)
        results[what] = lat
        print("   claim of %-6s                          %s   (x%.1f the floor at p50)"
              % (what, ms(lat), pct(lat, 50) / pct(floor, 50)))
        get, rest = log_split(node, "default/" + name)
        print("      gpulet's own log, median: the claim's GET %d ms, the rest (checks, CDI spec, checkpoint) %d ms"
              % (get, rest))
        # the floor: the claim's one GET (kubelet's request names it, the allocation is only in the API)
        print("      API requests per prepare+unprepare: %.2f (floor 1 GET: x%.2f; %s)"
              % (sum(api.values()), sum(api.values()) / 1.0,
                 ", ".join("%s %.2f" % kv for kv in sorted(api.items())) or "none"))
    real = os.path.join(BUILD, "realdriver", "root-plain", "usr/bin/nvidia-cuda-mps-control")
    if os.path.exists(real):
        import shutil
        shutil.copy(real, os.path.join(node.root, "usr/bin/nvidia-cuda-mps-control"))
        cfg = [{"opaque": {"driver": DRIVER, "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
                                                            "sharing": {"strategy": "MPS"}}}}]
        uid = allocated_claim(node, "mps", ["gpu-1"], cfg)
        ref = [{"namespace": "default", "name": "mps", "uid": uid}]
        lat = []
        for _ in range(max(3, N // 10)):
            t = time.perf_counter()
            r = kubelet.prepare(sock, "v1", ref)
            lat.append(time.perf_counter() - t)
            if r[uid]["error"]:
                raise SystemExit("prepare mps: %s" % r[uid]["error"])
            kubelet.unprepare(sock, "v1", ref)
        print("   claim of 1 GPU with MPS (the real control daemon started, limits set, asked)  %s" % ms(lat))
    return results


class Watch(threading.Thread):
    """kubectl get KIND -w: when each object was first seen in each state (arrival times)."""

    def __init__(self, node, kind):
        super().__init__(daemon=True)
        self.seen = {}
        self.p = subprocess.Popen(node.ns([node.bins["kubectl"], "--kubeconfig", node.admin_kubeconfig, "get", kind,
                                           "-w", "-o", "json"]), stdout=subprocess.PIPE, text=True)

    def run(self):
        dec = json.JSONDecoder()
        buf = ""
        for chunk in iter(lambda: self.p.stdout.readline(), ""):
            buf += chunk
            while buf.strip():
                try:
                    obj, end = dec.raw_decode(buf.lstrip())
                except ValueError:
                    break
                buf = buf.lstrip()[end:]
                self.saw(obj, time.time())

    def saw(self, obj, t):
        name = obj["metadata"]["name"]
        st = obj.get("status", {})
        marks = {"created": True, "bound": obj.get("spec", {}).get("nodeName"),
                 "running": any(cs.get("state", {}).get("running") for cs in st.get("containerStatuses", [])),
                 "allocated": st.get("allocation")}
        for mark, ok in marks.items():
            if ok:
                self.seen.setdefault((name, mark), t)
        owner = (obj["metadata"].get("ownerReferences") or [{}])[0]
        if obj.get("kind") == "ResourceClaim" and owner.get("kind") == "Pod":
            for mark in ("created", "allocated"):
                if (name, mark) in self.seen:
                    self.seen.setdefault((owner["name"], "claim-" + mark), self.seen[(name, mark)])

    def stop(self):
        self.p.kill()
        self.p.wait()


def gpu_pod(name, dra):
    res = {"claims": [{"name": "gpu"}]} if dra else {"limits": {"nvidia.com/gpu": "1"}}
    spec = {"hostNetwork": True, "automountServiceAccountToken": False, "enableServiceLinks": False,
            "restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                            "command": ["/bin/sh", "-c", "cat /proc/uptime; exec sleep 3600"], "resources": res}]}
    if dra:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def uptime():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def start_times(node, pods, claims, prefix, dra):
    """Per pod: its container's first instruction (its /proc/uptime: the same kernel's clock as ours,
    10 ms steps, unlike kubelet's 1 s PLEG relist) and the watch's times, all from the pod's apply."""
    out = []
    for i in range(PODS):
        name = "%s-%d" % (prefix, i)
        t0, up0 = time.time(), uptime()
        apply(node, gpu_pod(name, dra))
        node.wait("%s running" % name, lambda: (name, "running") in pods.seen, timeout=120)
        log = node.wait("%s's uptime" % name, lambda: node.kubectl("logs", name, check=False)[1].strip(), timeout=30)
        s = pods.seen
        row = {"total": float(log.split()[0]) - up0, "bind": s[(name, "bound")] - t0}
        if dra:
            c = claims.seen
            row["claim"] = c.get((name, "claim-created"), t0) - t0
            row["alloc"] = c.get((name, "claim-allocated"), s[(name, "bound")]) - t0
        out.append(row)
        # a graceful delete: kubelet unprepares the claim before the pod (and then its claim) is gone, so
        # the scheduler never hands its device to the next claim while it is still prepared
        node.kubectl("delete", "pod", name, "--wait=true", timeout=120, check=False)
    return out


def pod_start(node):
    print("\n2. pod created -> container started, one at a time (N=%d each, same node, same run)" % PODS)
    pods, claims = Watch(node, "pods"), Watch(node, "resourceclaims")
    pods.start()
    claims.start()
    time.sleep(2)
    dp = start_times(node, pods, claims, "dp", False)
    start_dra(node, wait_published=False)
    node.wait("the device plugin hands the node to gpulet dra", lambda: len(pool(node)) == 8, timeout=60, proc="dra")
    apply(node, template("one-gpu", [request("gpu")]))
    dra = start_times(node, pods, claims, "dra", True)
    pods.stop()
    claims.stop()
    for what, rows in (("device plugin", dp), ("gpulet dra", dra)):
        print("   %-14s each: %s" % (what, ", ".join("%.0f ms" % (r["total"] * 1000) for r in rows)))
    med = lambda rows, k: statistics.median(r[k] for r in rows)  # noqa: E731
    print("   device plugin (floor): bound %6.0f ms   started %6.0f ms" % (med(dp, "bind") * 1000, med(dp, "total") * 1000))
    print("   gpulet dra:            claim made %6.0f ms, allocated %6.0f ms, bound %6.0f ms, started %6.0f ms"
          % (med(dra, "claim") * 1000, med(dra, "alloc") * 1000, med(dra, "bind") * 1000, med(dra, "total") * 1000))
    diff = med(dra, "total") - med(dp, "total")
    alloc = med(dra, "alloc")
    sched = statistics.median(r["alloc"] - r["claim"] for r in dra)
    get, rest = log_split(node, "default/dra-")
    print("   gpulet's prepare (its log, median): the claim's GET %d ms, the rest %d ms" % (get, rest))
    print("   DRA slower by %.0f ms (x%.2f the floor); the scheduler's allocation step (pod created -> claim "
          "allocated) %.0f ms, of which allocating the made claim %.0f ms: %s"
          % (diff * 1000, med(dra, "total") / med(dp, "total"), alloc * 1000, sched * 1000,
             "within it" if diff <= alloc else "NOT within it"))


def mig_repartition():
    print("\n3. MIG re-partition (fake DGX A100, GPU 6: four instances -> one 7g.40gb)")
    with Node(mkroot_args=("--all-caps",)) as node:
        node.start(control_plane=True, plugin=False)
        start_dra(node, "--rescan-interval", "1")
        fx = node.fixture_data()
        before = log_count(node, "dra", "Published the ResourceSlices")
        fx["gpus"][6]["mig"] = [{"gi": 0, "gi_profile": 4, "placement": [0, 8],
                                 "cis": [{"ci": 0, "uuid": "MIG-7e7e7e7e-1001-5001-8001-a100c0de0778",
                                          "profile_name": "7g.40gb"}]}]
        fx["gpus"][6]["processes"] = []
        t = time.time()
        node.write_fixture(fx)
        node.wait("the new instance published", lambda: any("7g40gb" in d for d in pool(node)), timeout=30, proc="dra")
        took = time.time() - t
        lines = [line for line in node.log_tail("dra", 10 ** 8).splitlines() if "Published the ResourceSlices" in line]
        writes = sum(int(line.rsplit("writes=", 1)[1].split()[0]) for line in lines[before:])
        print("   ResourceSlice writes: %d (floor 1: x%.1f), published %.2f s after the rewrite "
              "(NVML's MIG event or the 1 s rescan, then one update)" % (writes, writes / 1.0, took))


def main():
    if os.environ.get("BENCH_DRA_ONLY") == "prepare":
        with Node(fixture="dgx-h100") as node:
            node.start(control_plane=True, plugin=False)
            start_dra(node)
            prepare_latency(node, os.path.join(node.kubelet_root, "plugins", DRIVER, "dra.sock"))
        return 0
    if os.environ.get("BENCH_DRA_ONLY") == "pods":
        with Node(fixture="dgx-h100") as node:
            node.start(control_plane=True)
            setup_classes(node)
            pod_start(node)
        return 0
    with Node(fixture="dgx-h100") as node:
        node.start(control_plane=True)
        setup_classes(node)
        # the prepare bench first, with the device plugin stopped: claims are allocated by hand
        node.stop_plugin()
        start_dra(node)
        sock = os.path.join(node.kubelet_root, "plugins", DRIVER, "dra.sock")
        prepare_latency(node, sock)
        node.stop_proc("dra")
        node.wait("kubelet wipes the slices", lambda: not pool(node), timeout=60)
        node.start_plugin(*node.plugin_args)
        node.wait_node_ready_for_gpus()
        for c in ("one", "eight", "mps"):
            node.kubectl("delete", "resourceclaim", c, "--ignore-not-found")
        pod_start(node)
    mig_repartition()
    return 0


if __name__ == "__main__":
    sys.exit(main())
