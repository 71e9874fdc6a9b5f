#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""MIG on the real node (tests/k8s/node.py):

  * a live re-partition under --mig-strategy=mixed (fake dgx-a100; the fake NVML rereads its
    fixture's "mig" array while the plugin runs, tests/fakenvml/README.md): GPU 6 goes from
    3g.20gb + 2g.10gb + 2x 1g.5gb to one 7g.40gb; the node object's allocatable follows, the
    plugin's CDI spec is written again with the new instance and without the old ones, and a pod
    asking for nvidia.com/mig-7g.40gb runs with its parent's node and exactly its 2 caps nodes;
  * --mig-strategy=single on a node whose MIG GPUs all share one profile (the fixture "mixed"
    without its T4: one A100 with 7x 1g.5gb): nvidia.com/gpu is the number of MIG instances, and a
    pod asking for one sees its parent's node and exactly its 2 caps nodes.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node import FIXTURES, Node, NodeError  # noqa: E402
from podcheck import check, check_pod, spec  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mkroot import mig_minor  # noqa: E402


def instance_caps(gpu_minor, gi, ci):
    """The caps nodes of one MIG instance (/proc/driver/nvidia-caps/mig-minors)."""
    return {"/dev/nvidia-caps/nvidia-cap%d" % m for m in (mig_minor(gpu_minor, gi), mig_minor(gpu_minor, gi, ci))}

BASE = ("--device-list-strategy=cdi-cri", "--rescan-interval", "1")
NEW_UUID = "MIG-7e7e7e7e-1001-5001-8001-a100c0de0778"


def allocatable(node):
    return node.node_json()["status"].get("allocatable", {})


def test_repartition():
    t0 = time.time()
    # --all-caps: the driver makes a new instance's caps nodes when it is created; the fake root
    # has them all from the start
    with Node(mkroot_args=("--all-caps",)) as node:
        node.start((*BASE, "--mig-strategy=mixed"), gpus="6")
        node.wait_node_ready_for_gpus(count="1", resource="nvidia.com/mig-3g.20gb")
        fx = node.fixture_data()
        old = {ci["uuid"] for gi in fx["gpus"][6]["mig"] for ci in gi["cis"]}
        check(all(u in json.dumps(spec(node)) for u in old), "the spec lacks GPU 6's MIG instances before")
        fx["gpus"][6]["mig"] = [{"gi": 0, "gi_profile": 4, "placement": [0, 8],
                                 "cis": [{"ci": 0, "uuid": NEW_UUID, "profile_name": "7g.40gb"}]}]
        fx["gpus"][6]["processes"] = []  # pid 5151 ran in GI 9, which is gone
        node.write_fixture(fx)
        want = {"nvidia.com/mig-7g.40gb": "1", "nvidia.com/mig-3g.20gb": "0", "nvidia.com/mig-2g.10gb": "1",
                "nvidia.com/mig-1g.5gb": "1", "nvidia.com/gpu": "6"}
        node.wait("allocatable after the re-partition %s" % want,
                  lambda: all(allocatable(node).get(k, "0") == v for k, v in want.items()), timeout=30, proc="plugin")
        print("PASS re-partition: the node's allocatable follows: %s"
              % {k: v for k, v in allocatable(node).items() if k.startswith("nvidia.com/")})
        node.wait("the spec written again with %s" % NEW_UUID, lambda: NEW_UUID in json.dumps(spec(node)),
                  timeout=30, proc="plugin")
        text = json.dumps(spec(node))
        check(not [u for u in old if u in text], "the spec still names GPU 6's old instances: %s"
              % [u for u in old if u in text])
        print("PASS re-partition: the spec holds the new 7g.40gb instance and none of the old ones")
        gpus, caps = check_pod(node, "mig-7g", 1, limits={"nvidia.com/mig-7g.40gb": "1"}, want_caps=2)
        minor = fx["gpus"][6]["minor"]
        check(gpus == {"/dev/nvidia%d" % minor}, "the 7g.40gb pod sees %s, not GPU 6's node" % sorted(gpus))
        check(caps == instance_caps(minor, 0, 0), "the 7g.40gb pod's caps %s, not GI 0 CI 0's" % sorted(caps))
        print("PASS re-partition: a 7g.40gb pod runs with /dev/nvidia%d and its caps %s" % (minor, sorted(caps)))
    print("PASS test_repartition (%.1fs)" % (time.time() - t0))


def test_single():
    t0 = time.time()
    with open(os.path.join(FIXTURES, "mixed.json")) as f:
        fx = json.load(f)
    fx["comment"] = "the fixture mixed without its T4: one A100-PCIE-40GB with MIG on, 7x 1g.5gb"
    fx["gpus"] = [g for g in fx["gpus"] if g.get("mig_mode")]
    fx["topology"] = {"pcie": [[0]]}
    instances = sum(len(gi["cis"]) for g in fx["gpus"] for gi in g["mig"])
    with tempfile.TemporaryDirectory(prefix="gpulet-k8s-fx.") as d:
        with open(os.path.join(d, "single-mig.json"), "w") as f:
            json.dump(fx, f)
        with Node(fixture=os.path.join(d, "single-mig")) as node:
            node.start(("--device-list-strategy=cdi-cri", "--mig-strategy=single"), gpus=str(instances))
            res = {k: v for k, v in allocatable(node).items() if k.startswith("nvidia.com/")}
            check(res == {"nvidia.com/gpu": str(instances)}, "allocatable under single: %s" % res)
            print("PASS single: the node shows nvidia.com/gpu %d (the MIG instances) and no other GPU resource"
                  % instances)
            gpus, caps = check_pod(node, "single-1", 1, want_caps=2)
            minor = fx["gpus"][0]["minor"]
            check(gpus == {"/dev/nvidia%d" % minor}, "the pod sees %s, not its parent's node" % sorted(gpus))
            mine = [gi for gi in fx["gpus"][0]["mig"] if caps == instance_caps(minor, gi["gi"], gi["cis"][0]["ci"])]
            check(mine, "the pod's caps %s are no instance's of GPU %d" % (sorted(caps), minor))
            print("PASS single: a 1-GPU pod sees /dev/nvidia%d and its caps %s" % (minor, sorted(caps)))
    print("PASS test_single (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_repartition()
        test_single()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
