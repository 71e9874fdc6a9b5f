#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The real node through the events of a GPU node's life (tests/k8s/node.py, fake dgx-a100):

  * a GPU that NVML loses drops out of the node's allocatable nvidia.com/gpu (capacity stays 8)
    and comes back when NVML sees it again;
  * kubelet restarts: the plugin registers again, capacity returns to 8 and a new pod gets its GPU;
  * the plugin restarts with --device-id-strategy=index: pods get their GPU by index names;
  * --mig-strategy=mixed: the node shows each MIG profile as its own resource and nvidia.com/gpu
    the 6 GPUs without MIG; a pod asking for one 1g.5gb instance runs with its parent's node and
    exactly the two nvidia-caps nodes of that instance (host major:minor);
  * time-slicing with 2 replicas: nvidia.com/gpu 16, a pod asking for one replica sees one GPU.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node import Node, NodeError  # noqa: E402
from podcheck import check, check_pod  # noqa: E402

BASE = ("--device-list-strategy=cdi-cri", "--rescan-interval", "1")


def step(msg, t0):
    print("PASS %s (%.1fs)" % (msg, time.time() - t0))


def test_lifecycle():
    t0 = time.time()
    with Node() as node:
        node.start(BASE)
        step("node up, nvidia.com/gpu 8/8", t0)

        t = time.time()
        fx = node.fixture_data()
        fx["gpus"][2]["lost"] = True
        node.write_fixture(fx)
        node.wait("allocatable 7 with GPU 2 lost", lambda: node.gpu_capacity() == ("8", "7"), timeout=30,
                  proc="plugin")
        fx["gpus"][2]["lost"] = False
        node.write_fixture(fx)
        node.wait("allocatable 8 with GPU 2 back", lambda: node.gpu_capacity() == ("8", "8"), timeout=30,
                  proc="plugin")
        step("lost GPU: allocatable 8 -> 7 -> 8, capacity 8", t)

        t = time.time()
        registered = node.log_tail("plugin", 10 ** 7).count("Registered device plugin")
        node.stop_proc("kubelet")
        node.start_kubelet()
        node.wait("the plugin to register again with the new kubelet",
                  lambda: node.log_tail("plugin", 10 ** 7).count("Registered device plugin") > registered,
                  timeout=30, proc="plugin")
        node.wait_node_ready_for_gpus()
        check_pod(node, "after-kubelet-restart", 1)
        step("kubelet restart: re-registered, 8/8, a 1-GPU pod runs with its GPU", t)

        t = time.time()
        node.stop_plugin()
        node.start_plugin(*BASE, "--device-id-strategy=index")
        node.wait_node_ready_for_gpus()
        check_pod(node, "index-ids", 1)
        step("plugin restart with index IDs: a 1-GPU pod runs with its GPU", t)

        t = time.time()
        profiles = collections.Counter("nvidia.com/mig-" + ci["profile_name"] for g in fx["gpus"] if g.get("mig_mode")
                                       for gi in g["mig"] for ci in gi["cis"])
        node.stop_plugin()
        node.start_plugin(*BASE, "--mig-strategy=mixed")
        node.wait_node_ready_for_gpus(count="6")
        for res, n in profiles.items():
            node.wait_node_ready_for_gpus(count=str(n), resource=res)
        check("nvidia.com/mig-1g.5gb" in profiles, "fixture profiles %s" % dict(profiles))
        check_pod(node, "mig-1g", 1, limits={"nvidia.com/mig-1g.5gb": "1"}, want_caps=2)
        step("MIG mixed: %s on the node; a 1g.5gb pod sees its parent's node and its 2 caps nodes"
             % dict(profiles), t)

        t = time.time()
        cfg = os.path.join(node.t, "timeslicing.yaml")
        with open(cfg, "w") as f:
            f.write("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                    "      replicas: 2\n")
        node.stop_plugin()
        node.start_plugin(*BASE, "--config-file", cfg)
        node.wait_node_ready_for_gpus(count="16")
        check_pod(node, "time-sliced", 1)
        step("time-slicing 2 replicas: nvidia.com/gpu 16/16, a 1-replica pod sees one GPU", t)
    print("PASS test_lifecycle (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_lifecycle()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
