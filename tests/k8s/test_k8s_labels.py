#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet labels` reach the real node object. gpulet writes NFD's local feature file (it has no
Kubernetes client); on a cluster NFD's worker turns that file into node labels. Here the test plays
NFD's part the documented direct way (`kubectl label node`), so the real API server validates every
key and value gpulet produces (63-character values, allowed characters), and the node object ends up
with exactly the file's labels, for --mig-strategy none and mixed on the fake dgx-a100.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node import FAKE_NVML_LIB, GPULET, NODE_NAME, Node, NodeError  # noqa: E402
from podcheck import check  # noqa: E402


def labels(node, strategy):
    p = subprocess.run([GPULET, "labels", "--oneshot", "--output", "-", "--no-timestamp", "--root", node.root,
                        "--nvml-library", FAKE_NVML_LIB, "--mig-strategy", strategy],
                       capture_output=True, text=True, env=node.plugin_env(), timeout=60)
    check(p.returncode == 0, "gpulet labels --mig-strategy %s: rc %d %s" % (strategy, p.returncode, p.stderr[-2000:]))
    out = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
    check(out.get("nvidia.com/gpu.count") == "8", "labels %s" % out)
    return out


def test_labels():
    t0 = time.time()
    with Node() as node:
        node.start()
        before = set(node.node_json()["metadata"]["labels"])
        for strategy in ("none", "mixed"):
            want = labels(node, strategy)
            node.kubectl("label", "node", NODE_NAME, "--overwrite", *("%s=%s" % kv for kv in sorted(want.items())))
            got = {k: v for k, v in node.node_json()["metadata"]["labels"].items() if k not in before}
            check(got == want, "node labels after --mig-strategy %s:\n got  %s\n want %s" % (strategy, got, want))
            node.kubectl("label", "node", NODE_NAME, *("%s-" % k for k in sorted(want)))
            print("PASS labels --mig-strategy %s: %d labels accepted by the API server and on the node object"
                  % (strategy, len(want)))
    print("PASS test_labels (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_labels()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
