#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The pool of `gpulet dra` follows the GPUs on a real 1.34 node (tests/k8s/node.py, control plane, no
device plugin; the fake NVML's events and fixture rewrites, tests/fakenvml/README.md;
docs/reference/dra.md §3.3, §5.4, §12):

  * an XID a GPU needs no reset for (32): the device leaves the pool (one generation up), kubelet's
    device health stream (ResourceHealthStatus on) marks the running pod's device Unhealthy in its
    status; released, it is not allocated to a new claim until, after the quiet period, it is back;
  * a MIG re-partition (GPU 6 from four instances to one 7g.40gb): the pool holds the new instance
    and none of the old ones, in one ResourceSlice update and one generation, and a claim for the
    7g.40gb profile runs with its parent's node and exactly its two caps nodes;
  * a lost GPU leaves the pool;
  * NVIDIA's NVMLDeviceHealthCheck: with the API server's DRADeviceTaints gate, an unhealthy device
    stays with NVIDIA's taint (gpu.nvidia.com/xid=48, NoSchedule) and the scheduler does not give it
    out; without the gate the API server drops the taint, gpulet says so and leaves the device out.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dralib import (Node, apply, check, check_sees, claim, claim_of, delete_pod, generation, log_count, pod,  # noqa: E402
                    pool, probe, read_spec, request, set_boot_id, setup_classes, start_dra, stop_dra, timed,
                    wait_running)
from test_k8s_dra import node_spec  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mkroot import mig_minor  # noqa: E402

ATTR = "device.attributes['gpu.nvidia.com']"
NEW_UUID = "MIG-7e7e7e7e-1001-5001-8001-a100c0de0778"


class HealthNode(Node):
    feature_gates = {"ResourceHealthStatus": True}


class TaintNode(Node):
    # the scheduler's taint support follows DeviceTaintRules too, served as resource.k8s.io/v1alpha3
    feature_gates = {"DRADeviceTaints": True}
    apiserver_flags = ("--runtime-config=resource.k8s.io/v1alpha3=true",)


def xid(node, gpu, code):
    with open(node.events_file, "a") as f:
        f.write("xid %s %d\n" % (gpu, code))


def device_health(node, pod_name):
    """{device: health} of the pod's allocated resources (kubelet's ResourceHealthStatus names each by
    its first CDI id, k8s.gpu.nvidia.com/claim=<claim uid>-<device>: pkg/kubelet/cm/dra/manager.go)."""
    out = {}
    for cs in node.get("pod", pod_name)["status"].get("containerStatuses", []):
        for r in cs.get("allocatedResourcesStatus") or []:
            for res in r.get("resources") or []:
                out[res["resourceID"].split("=", 1)[-1][37:]] = res.get("health")
    return out


def last_publish(node):
    lines = [line for line in node.log_tail("dra", 10 ** 8).splitlines() if "Published the ResourceSlices" in line]
    return lines[-1] if lines else ""


def health_and_mig():
    t0 = time.time()
    with HealthNode(mkroot_args=("--all-caps",)) as node:
        node.start(control_plane=True, plugin=False)
        set_boot_id(node, "boot-1")
        start_dra(node, "--rescan-interval", "1", "--health-recovery-interval", "15")
        setup_classes(node)
        node.wait("the health watcher", lambda: "Watching the GPUs' health" in node.log_tail("dra", 10 ** 8), proc="dra")
        timed("node up with ResourceHealthStatus, gpulet dra watching its GPUs", t0)

        t = time.time()
        # kubelet 1.34 reports a claim's health only when the pod names its claim reference as the
        # ResourceClaim is named (UpdateAllocatedResourcesStatus in pkg/kubelet/cm/dra/manager.go)
        apply(node, claim("c1", [request("gpu", cel=ATTR + ".index == 1")]),
              pod("p1", "true", claim_name="c1", ref_name="c1"))
        wait_running(node, "p1")
        node.wait("kubelet's health stream", lambda: device_health(node, "p1").get("gpu-1") == "Healthy", timeout=60)
        gen = generation(node)
        xid(node, 1, 32)
        node.wait("gpu-1 out of the pool", lambda: "gpu-1" not in pool(node) and generation(node) == gen + 1, timeout=20,
                  proc="dra")
        node.wait("p1's device Unhealthy in its status", lambda: device_health(node, "p1").get("gpu-1") == "Unhealthy",
                  timeout=60)
        # released, the unhealthy GPU is not given to another claim until it recovers
        delete_pod(node, "p1")
        node.kubectl("delete", "resourceclaim", "c1")
        apply(node, claim("c1b", [request("gpu", cel=ATTR + ".index == 1")]), pod("p1b", "true", claim_name="c1b"))
        time.sleep(3)
        check("gpu-1" not in pool(node), "gpu-1 recovered too early for the test")
        check(not node.get("resourceclaim", "c1b").get("status", {}).get("allocation"), "the unhealthy GPU was given out")
        node.wait("gpu-1 back after the quiet period", lambda: "gpu-1" in pool(node), timeout=30, proc="dra")
        wait_running(node, "p1b")
        check("unhealthy device" in node.log_tail("dra", 10 ** 8) and "device is healthy again" in node.log_tail("dra", 10 ** 8),
              "the log says both")
        timed("XID 32 on GPU 1: out of the pool, Unhealthy in the pod's status, not given out; back after 15 s", t)

        t = time.time()
        fx = node.fixture_data()
        old = {ci["uuid"] for gi in fx["gpus"][6]["mig"] for ci in gi["cis"]}
        minor = fx["gpus"][6]["minor"]
        gen, writes = generation(node), log_count(node, "dra", "Published the ResourceSlices")
        fx["gpus"][6]["mig"] = [{"gi": 0, "gi_profile": 4, "placement": [0, 8],
                                 "cis": [{"ci": 0, "uuid": NEW_UUID, "profile_name": "7g.40gb"}]}]
        fx["gpus"][6]["processes"] = []
        node.write_fixture(fx)
        node.wait("the new instance in the pool", lambda: any(d["attributes"]["uuid"]["string"] == NEW_UUID
                                                              for d in pool(node).values()), timeout=30, proc="dra")
        devs = pool(node)
        check(not [n for n, d in devs.items() if d["attributes"]["uuid"]["string"] in old], "old instances: %s" % sorted(devs))
        check(generation(node) == gen + 1, "generation %d -> %d" % (gen, generation(node)))
        check(log_count(node, "dra", "Published the ResourceSlices") == writes + 1 and "writes=1" in last_publish(node),
              "one update: %s" % last_publish(node))
        script = probe(node_spec(node))
        apply(node, claim("m7", [request("mig", "mig.nvidia.com", ATTR + ".profile == '7g.40gb'")]),
              pod("p7", script, claim_name="m7"))
        c = node.wait("m7 allocated", lambda: (lambda c: c.get("status", {}).get("allocation") and c)(claim_of(node, "p7")),
                      timeout=60, proc="kube-scheduler")
        log = wait_running(node, "p7")
        devs, _ = check_sees(node, "p7", read_spec(node, c["metadata"]["uid"]), want_devices=1, want_caps=2, log=log)
        want_caps = {"/dev/nvidia-caps/nvidia-cap%d" % m for m in (mig_minor(minor, 0), mig_minor(minor, 0, 0))}
        check({p for p in devs if "caps" in p} == want_caps and "/dev/nvidia%d" % minor in devs, "p7 sees %s" % sorted(devs))
        timed("MIG re-partition: the new 7g.40gb in one slice update, generation %d -> %d; its claim runs" % (gen, gen + 1), t)

        t = time.time()
        fx = node.fixture_data()
        fx["gpus"][3]["lost"] = True
        node.write_fixture(fx)
        node.wait("the lost GPU out of the pool", lambda: "gpu-3" not in pool(node), timeout=30, proc="dra")
        timed("a lost GPU leaves the pool", t)

        t = time.time()
        stop_dra(node)
        start_dra(node, "--feature-gates", "NVMLDeviceHealthCheck=true", "--rescan-interval", "1")
        node.wait("the health watcher", lambda: log_count(node, "dra", "Watching the GPUs' health") == 2, proc="dra")
        xid(node, 4, 79)
        node.wait("the API server's gate said", lambda: "dropped the device taints" in node.log_tail("dra", 10 ** 8),
                  timeout=20, proc="dra")
        node.wait("gpu-4 left out instead", lambda: "gpu-4" not in pool(node), timeout=20, proc="dra")
        timed("NVMLDeviceHealthCheck without DRADeviceTaints: the API server drops the taint, gpulet leaves the device out", t)
        for p in ("p1b", "p7"):
            delete_pod(node, p, wait=False)


def taints():
    t0 = time.time()
    with TaintNode() as node:
        node.start(control_plane=True, plugin=False)
        start_dra(node, "--feature-gates", "NVMLDeviceHealthCheck=true")
        setup_classes(node)
        node.wait("the health watcher", lambda: "Watching the GPUs' health" in node.log_tail("dra", 10 ** 8), proc="dra")
        timed("node up with DRADeviceTaints, gpulet dra tainting unhealthy devices", t0)

        t = time.time()
        gen = generation(node)
        xid(node, 2, 48)
        node.wait("gpu-2 tainted", lambda: pool(node).get("gpu-2", {}).get("taints"), timeout=20, proc="dra")
        taint = pool(node)["gpu-2"]["taints"][0]
        check(taint["key"] == "gpu.nvidia.com/xid" and taint["value"] == "48" and taint["effect"] == "NoSchedule",
              "taint: %s" % taint)
        check(generation(node) == gen + 1 and len(pool(node)) == 13, "the pool: %d devices" % len(pool(node)))
        apply(node, claim("c2", [request("gpu", cel=ATTR + ".index == 2")]), pod("p2", "true", claim_name="c2"))
        node.wait("the scheduler refuses the tainted GPU", lambda: [m for r, _, m in node.events_of("p2") if r == "FailedScheduling"],
                  timeout=60, proc="kube-scheduler")
        check(not node.get("resourceclaim", "c2").get("status", {}).get("allocation"), "the tainted GPU was given out")
        check("dropped the device taints" not in node.log_tail("dra", 10 ** 8), "taints said dropped")
        timed("NVMLDeviceHealthCheck: XID 48 taints gpu-2 (gpu.nvidia.com/xid=48, NoSchedule); the scheduler does not give it out", t)


def main():
    parts = {"health_and_mig": health_and_mig, "taints": taints}
    for name in sys.argv[1:] or parts:
        parts[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
