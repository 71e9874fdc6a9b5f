#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""On a real node (tests/k8s/node.py: etcd, kube-apiserver, kubelet 1.34, containerd 2 with CDI),
gpulet's plugin on the fake dgx-a100 (8 A100s, GPUs 6 and 7 MIG-enabled):

  * the node object shows nvidia.com/gpu: 8 in capacity and allocatable (the field guide's check);
  * a pod with nodeName asking for 1 GPU runs, under cdi-cri and then cdi-annotations, with exactly
    its GPU's device nodes (the host's major:minor, no other GPU's), the control nodes, every file
    the spec mounts, the spec's env and an ld.so.cache that maps libcuda.so.1;
  * a pod asking for all 8 GPUs gets every GPU node, the MIG-enabled ones included (the MIG-under-none
    case: before the fix their CDI names resolved in no spec and containerd failed the container with
    "CDI device injection failed: unresolvable CDI devices");
  * a GPU still advertised but left out of the spec (its device node gone) is refused by Allocate: the
    pod fails admission with the plugin's reason, never a CDI name no spec defines.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node import Node, NodeError  # noqa: E402

from podcheck import check, check_pod, spec  # noqa: E402


def test_gpu_pods():
    t0 = time.time()
    with Node() as node:
        node.start(("--device-list-strategy=cdi-cri",))
        print("node up in %.1fs (peers %.1fs, bring-up %.1fs)" % (time.time() - t0, node.timing["peers_s"],
                                                                   node.timing["bringup_s"]))
        cap = node.gpu_capacity()
        check(cap == ("8", "8"), "capacity/allocatable nvidia.com/gpu %s" % (cap,))
        print("PASS capacity: nvidia.com/gpu 8/8")

        names = {d["name"] for d in spec(node)["devices"]}
        check(len(names) > 8, "spec devices %s" % sorted(names))
        check_pod(node, "one-gpu-cri", 1)
        print("PASS cdi-cri: 1 GPU pod sees its node (host major:minor), control nodes, mounts, env, ld.so.cache")
        check_pod(node, "all-gpus-cri", 8)
        print("PASS cdi-cri: 8 GPU pod, MIG-enabled GPUs 6 and 7 included (MIG under none)")

        node.stop_plugin()
        node.start_plugin("--device-list-strategy=cdi-annotations")
        node.wait_node_ready_for_gpus()
        check_pod(node, "one-gpu-ann", 1)
        print("PASS cdi-annotations: 1 GPU pod")

        # a GPU NVML lists but whose node is gone is advertised and left out of the spec: Allocate
        # refuses it, and the pod fails admission with the plugin's reason instead of sitting in
        # CreateContainerError on an unresolvable CDI name
        gone = node.fixture_data()["gpus"][5]
        os.unlink(os.path.join(node.root, "dev/nvidia%d" % gone["minor"]))
        node.stop_plugin()
        node.start_plugin("--device-list-strategy=cdi-cri")
        node.wait_node_ready_for_gpus()
        st, _ = node.run_pod("all-gpus-one-gone", "true", {"nvidia.com/gpu": "8"})
        check(st.get("phase") == "Failed" and st.get("reason") == "UnexpectedAdmissionError"
              and "not defined in the plugin's CDI spec" in st.get("message", ""),
              "pod with a GPU the spec lacks: %s" % json.dumps(st)[:1500])
        print("PASS a GPU left out of the spec: Allocate refuses it, the pod fails admission: %s"
              % st["message"][:200])
    print("PASS test_gpu_pods (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_gpu_pods()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
