#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet doctor` on the live real node (tests/k8s/node.py; the node's files are readable under
--root R as on a host: R/var/lib/kubelet, R/etc/containerd/config.toml, the driver and /dev of the
fake dgx-a100), with --pods/--node fed from the real API server's JSON:

  * healthy (plugin with CDI and the default --mig-strategy=none on the MIG-enabled GPU 6, which it
    advertises whole on purpose, a pod holding it): exit 0 and no failure (no mig.layout-stale);
  * the plugin stopped: the doctor fails, naming the plugin link.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node import FAKE_NVML_LIB, GPULET, NODE_NAME, Node, NodeError  # noqa: E402
from podcheck import check  # noqa: E402


def doctor(node):
    for what, args in (("pods", ("get", "pods", "-A", "-o", "json")), ("node", ("get", "node", NODE_NAME, "-o", "json"))):
        with open(os.path.join(node.t, what + ".json"), "w") as f:
            f.write(node.kubectl(*args)[1])
    p = subprocess.run([GPULET, "doctor", "--root", node.root, "--live", "--nvml-library", FAKE_NVML_LIB,
                        "--runtime-class", "", "--pods", os.path.join(node.t, "pods.json"),
                        "--node", os.path.join(node.t, "node.json"), "--json"],
                       capture_output=True, text=True, env=node.plugin_env(), timeout=120)
    try:
        findings = json.loads(p.stdout)["findings"]
    except ValueError:
        raise NodeError("doctor printed no JSON (rc %d): %s %s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return p.returncode, [f for f in findings if f["severity"] == "fail"]


def show(fails):
    return "\n".join("%s: %s %s" % (f["id"], f["summary"], json.dumps(f.get("evidence"))[:800]) for f in fails)


def test_doctor():
    t0 = time.time()
    with Node() as node:
        node.start(("--device-list-strategy=cdi-cri", "--mig-strategy=none"), gpus="8")
        node.start_pod("holder", "true", {"nvidia.com/gpu": "1"})
        rc, fails = doctor(node)
        check(rc == 0 and not fails, "doctor on the healthy node: rc %d\n%s" % (rc, show(fails)))
        print("PASS doctor on the healthy live node: exit 0, no failure")

        node.stop_plugin()
        rc, fails = doctor(node)
        check(rc == 1 and any(f["id"].startswith("plugin.") for f in fails),
              "doctor with the plugin stopped: rc %d\n%s" % (rc, show(fails)))
        print("PASS doctor with the plugin stopped: %s" % [f["id"] for f in fails])
    print("PASS test_doctor (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_doctor()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
