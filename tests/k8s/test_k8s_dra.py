#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What `gpulet dra` can show a real 1.34 cluster before it talks to the API server itself
(tests/k8s/node.py with kube-scheduler and kube-controller-manager; docs/reference/dra.md):

  * the real kubelet's plugin watcher finds gpulet dra's registration socket, calls GetInfo and
    registers it (gpulet logs kubelet's NotifyRegistrationStatus);
  * the ResourceSlice gpulet builds for the fake DGX A100 (tests/golden/dra/dgx-a100.slices.json, the
    builder's output pinned by the dra_unit test) is accepted by the real kube-apiserver;
  * NVIDIA's DeviceClasses and the CEL selectors of NVIDIA's example claims (gpu-test4's MIG profiles
    with a parentUUID constraint, gpu-test6's productName and index, version and capacity
    comparisons) are allocated by the real scheduler to the devices they name;
  * kubelet then calls gpulet's NodePrepareResources for the pod, and the pod's events carry gpulet's
    answer: without the Kubernetes API client it cannot read the claim, and says so.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import copy
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node import BUSYBOX_IMAGE, FAKE_NVML_LIB, GPULET, NODE_NAME, SRC, Node  # noqa: E402
from podcheck import check  # noqa: E402

DRIVER = "gpu.nvidia.com"
# NVIDIA's chart, deployments/helm/.../templates/deviceclass-{gpu,mig}.yaml at v25.12.0
DEVICE_CLASSES = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                   "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                                                 "device.attributes['gpu.nvidia.com'].type == '%s'" % t}}]}}
                  for name, t in (("gpu.nvidia.com", "gpu"), ("mig.nvidia.com", "mig"))]


def request(name, cls, cel=None):
    r = {"name": name, "exactly": {"deviceClassName": cls}}
    if cel:
        r["exactly"]["selectors"] = [{"cel": {"expression": cel}}]
    return r


def claim(name, requests, constraints=None):
    spec = {"devices": {"requests": requests}}
    if constraints:
        spec["devices"]["constraints"] = constraints
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


CLAIMS = {
    # gpu-test6: productName.lowerAscii().matches(...) && index == N
    "a100-index-2": (claim("a100-index-2", [request("gpu", "gpu.nvidia.com", "device.attributes['gpu.nvidia.com']."
                                                    "productName.lowerAscii().matches('^.*a100.*$') && "
                                                    "device.attributes['gpu.nvidia.com'].index == 2")]),
                     lambda devs: devs == ["gpu-2"]),
    # gpu-test4: MIG profiles from one parent
    "mig-pair": (claim("mig-pair", [request("mig-1g", "mig.nvidia.com", "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"),
                                    request("mig-2g", "mig.nvidia.com", "device.attributes['gpu.nvidia.com'].profile == '2g.10gb'")],
                       [{"requests": [], "matchAttribute": "gpu.nvidia.com/parentUUID"}]),
                 lambda devs: len(devs) == 2 and devs[0].split("-mig-")[0] == devs[1].split("-mig-")[0]
                 and "-mig-1g5gb-19-" in devs[0] and "-mig-2g10gb-14-" in devs[1]),
    # versions and capacity, typed as NVIDIA types them (semver, quantity)
    "typed": (claim("typed", [request("gpu", "gpu.nvidia.com",
                                      "device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('7.5.0')) && "
                                      "device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('550.0.0')) >= 0 && "
                                      "device.attributes['gpu.nvidia.com'].architecture == 'Ampere' && "
                                      "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0 && "
                                      "device.attributes['gpu.nvidia.com'].minor == 5")]),
              lambda devs: devs == ["gpu-5"]),
}


def pod(name, claim_name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"hostNetwork": True, "automountServiceAccountToken": False, "enableServiceLinks": False,
                     "restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "tolerations": [{"operator": "Exists"}],
                     "resourceClaims": [{"name": "gpus", "resourceClaimName": claim_name}],
                     "containers": [{"name": "c", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                                     "command": ["/bin/sh", "-c", "exec sleep 3600"],
                                     "resources": {"claims": [{"name": "gpus"}]}}]}}



def main():
    t0 = time.time()
    with Node() as node:
        node.start(control_plane=True)
        print("PASS node with kube-scheduler and kube-controller-manager up (%.1fs)" % (time.time() - t0))

        t = time.time()
        node.spawn("dra", [GPULET, "dra", "--nvml-library", FAKE_NVML_LIB, "--root", node.root, "--driver-root",
                           node.root, "--nvidia-cdi-hook-path", node.hook, "--node-name", NODE_NAME],
                   env=node.plugin_env())
        node.wait("kubelet registers gpulet dra", lambda: "Registered DRA plugin with kubelet" in node.log_tail("dra", 100000),
                  timeout=60, proc="dra")
        print("PASS the real kubelet registered gpulet dra (%.1fs)" % (time.time() - t))

        t = time.time()
        with open(os.path.join(SRC, "tests/golden/dra/dgx-a100.slices.json")) as f:
            slices = json.load(f)["slices"]
        uid = node.get("node", NODE_NAME)["metadata"]["uid"]
        for s in slices:
            s = copy.deepcopy(s)
            s["metadata"]["generateName"] = "%s-%s-" % (NODE_NAME, DRIVER)
            s["metadata"]["ownerReferences"][0].update(name=NODE_NAME, uid=uid)
            s["spec"]["nodeName"] = NODE_NAME
            s["spec"]["pool"]["name"] = NODE_NAME
            node.kubectl("create", "-f", "-", stdin=json.dumps(s))
        stored = node.get("resourceslices")["items"]
        check(len(stored) == 1 and len(stored[0]["spec"]["devices"]) == 13, "slices stored: %s" % len(stored))
        print("PASS the real kube-apiserver accepted gpulet's ResourceSlice, 13 devices (%.1fs)" % (time.time() - t))

        t = time.time()
        for dc in DEVICE_CLASSES:
            node.kubectl("apply", "-f", "-", stdin=json.dumps(dc))
        for name, (c, _) in CLAIMS.items():
            node.kubectl("apply", "-f", "-", stdin=json.dumps(c))
            node.kubectl("apply", "-f", "-", stdin=json.dumps(pod("p-" + name, name)))
        for name, (_, want) in CLAIMS.items():
            alloc = node.wait("claim %s allocated" % name,
                              lambda name=name: node.get("resourceclaim", name).get("status", {}).get("allocation"),
                              timeout=60, proc="kube-scheduler")
            devs = [r["device"] for r in alloc["devices"]["results"]]
            check(all(r["driver"] == DRIVER and r["pool"] == NODE_NAME for r in alloc["devices"]["results"]),
                  "%s: %s" % (name, alloc))
            check(want(devs), "%s allocated %s" % (name, devs))
            print("PASS claim %s allocated by the real scheduler: %s" % (name, devs))
        print("PASS NVIDIA's DeviceClasses and example selectors on gpulet's attributes (%.1fs)" % (time.time() - t))

        t = time.time()

        def failed_prepare():
            evs = node.get("events", "--field-selector", "involvedObject.name=p-a100-index-2")["items"]
            return [e["message"] for e in evs if e.get("reason") == "FailedPrepareDynamicResources"]
        msgs = node.wait("kubelet's FailedPrepareDynamicResources event", failed_prepare, timeout=90, proc="dra")
        check(any("cannot read ResourceClaims from the API server" in m for m in msgs), "events: %s" % msgs)
        check("Cannot prepare claim" in node.log_tail("dra", 100000), "gpulet dra's log")
        print("PASS kubelet called gpulet's NodePrepareResources; its answer is in the pod's events (%.1fs)"
              % (time.time() - t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
