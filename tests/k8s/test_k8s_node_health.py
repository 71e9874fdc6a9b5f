#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""GPU health on the Node object (`gpulet plugin --node-health`, issue 32 item 5) on the real node of
tests/k8s (kube-apiserver with RBAC, kubelet updating the Node's status every 2 s), with the chart's
device-plugin ServiceAccount and rules exactly as `helm template` renders them (chartapi.py):

  * the plugin applies GPUHealthy=True ("all 8 GPUs healthy") and kubelet's Ready stays, and ours stays
    through kubelet's own status updates (server-side apply under our field manager);
  * an injected XID 32 (fake NVML event) turns it False with reason XID32 naming GPU 2's index and UUID,
    with a Warning Event GPUUnhealthy on the Node (its uid); the GPU heals after the quiet period and the
    condition is True again, with a Normal Event GPUHealthy;
  * a double-bit ECC error on GPU 5 and XID 79 on GPU 4 together: reason GPULost (the worst), both named;
  * a restarted plugin whose GPUs are healthy sets the stale False back to True;
  * the account's token cannot do more than the rules: gpulet's client is refused a patch of the Node
    itself and names the RBAC rule that is missing;
  * events beyond the burst are dropped and said so (rate limit);
  * the plugin itself never maps libcurl (and the TLS libraries it pulls in): each round with the API
    server is a child of its own (src/plugin/node_health_int.h), so its memory stays the plugin's.

Fails on a plugin without --node-health (no condition ever appears). Without the registries (Go module
proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chartapi import RbacNode, grant  # noqa: E402
from node import BUILD, NODE_NAME, NodeError  # noqa: E402
from podcheck import check  # noqa: E402

TOOL = os.path.join(BUILD, "kapi_tool")


def condition(node, ctype="GPUHealthy"):
    for c in node.node_json()["status"].get("conditions", []):
        if c["type"] == ctype:
            return c
    return None


def wait_condition(node, what, pred, timeout=30):
    return node.wait(what, lambda: (lambda c: c if c and pred(c) else None)(condition(node)), timeout=timeout,
                     proc="plugin")


def gpulet_events(node):
    return [e for e in node.get("events", "-A", "--field-selector", "involvedObject.name=" + NODE_NAME)["items"]
            if e.get("source", {}).get("component") == "gpulet-device-plugin"]


def start(node, kc):
    node.stop_plugin()
    node.start_plugin("--device-list-strategy=cdi-cri", "--node-health", "--node-name", NODE_NAME, "--kubeconfig", kc,
                      "--health-recovery-interval=2")
    node.wait_node_ready_for_gpus(count="8")


def test_node_health():
    t0 = time.time()
    with RbacNode() as node:
        node.start()
        kc = grant(node, "device-plugin")
        start(node, kc)
        c = wait_condition(node, "GPUHealthy=True", lambda c: c["status"] == "True")
        check(c["reason"] == "GPUsHealthy" and "all 8 GPUs healthy" in c["message"], "condition %s" % c)
        ready0 = condition(node, "Ready")
        check(ready0 is not None, "kubelet's Ready is gone: %s" % node.node_json()["status"]["conditions"])
        time.sleep(7)  # kubelet updates the status every 2 s
        ready1, ours = condition(node, "Ready"), condition(node)
        check(ours == c, "kubelet's updates changed our condition: %s -> %s" % (c, ours))
        check(ready1 and ready1["lastHeartbeatTime"] != ready0["lastHeartbeatTime"],
              "kubelet did not update Ready meanwhile: %s %s" % (ready0, ready1))
        print("PASS GPUHealthy=True beside kubelet's Ready, kept through kubelet's status updates")

        uid = node.node_json()["metadata"]["uid"]
        g = [x["uuid"] for x in node.fixture_data()["gpus"]]
        with open(node.events_file, "a") as f:
            f.write("xid 2 32\n")
        c = wait_condition(node, "GPUHealthy=False", lambda c: c["status"] == "False")
        check(c["reason"] == "XID32" and "GPU 2 %s" % g[2] in c["message"] and "1 of 8" in c["message"],
              "condition after XID 32 on GPU 2: %s" % c)
        ev = node.wait("the GPUUnhealthy event", lambda: [e for e in gpulet_events(node)
                                                          if e["reason"] == "GPUUnhealthy"], timeout=20)
        check(ev[0]["type"] == "Warning" and g[2] in ev[0]["message"] and ev[0]["involvedObject"]["uid"] == uid and
              ev[0]["involvedObject"]["kind"] == "Node", "event %s" % ev[0])
        print("PASS XID 32: GPUHealthy=False %s: %s; event %s: %s" % (c["reason"], c["message"], ev[0]["reason"],
                                                                     ev[0]["message"]))
        with open("/proc/%d/maps" % node.procs["plugin"].pid) as f:
            curl = [line.split()[-1] for line in f if "libcurl" in line]
        check(not curl, "the plugin maps %s after sending: the API client is not in a child" % curl[:1])
        print("PASS the plugin maps no libcurl after sending the condition and an event")
        c = wait_condition(node, "GPUHealthy=True again", lambda c: c["status"] == "True")
        ev = node.wait("the GPUHealthy event", lambda: [e for e in gpulet_events(node)
                                                        if e["reason"] == "GPUHealthy"], timeout=20)
        check(ev[0]["type"] == "Normal" and g[2] in ev[0]["message"], "event %s" % ev[0])
        print("PASS healed after the quiet period: GPUHealthy=True, event %s" % ev[0]["message"])

        with open(node.events_file, "a") as f:
            f.write("dbe 5\nxid 4 79\n")
        c = wait_condition(node, "GPULost", lambda c: c["reason"] == "GPULost" and "GPU 5" in c["message"])
        check(c["status"] == "False" and "2 of 8" in c["message"] and g[4] in c["message"] and g[5] in c["message"],
              "two faults: %s" % c)
        print("PASS DBE on GPU 5 and XID 79 on GPU 4: %s: %s" % (c["reason"], c["message"]))

        start(node, kc)  # a new process (its own rate limit): the fake GPUs answer healthy again
        t1, n0 = time.time(), len(gpulet_events(node))
        c = wait_condition(node, "the stale False set True", lambda c: c["status"] == "True")
        print("PASS a restarted plugin with healthy GPUs sets GPUHealthy=True again (%s)" % c["lastTransitionTime"])

        patch = os.path.join(node.t, "patch.json")
        with open(patch, "w") as f:
            json.dump({"metadata": {"labels": {"gpulet.test/x": "y"}}}, f)
        p = subprocess.run(node.ns([TOOL, "--kubeconfig", kc, "patch", "nodes", "-", NODE_NAME, "-", "merge", patch]),
                           capture_output=True, text=True, timeout=60)
        check(p.returncode != 0 and 'RBAC needs {apiGroups: [""], resources: [nodes], verbs: [patch]}' in p.stderr,
              "a patch of the Node with the plugin's token: rc %d %s" % (p.returncode, p.stderr))
        print("PASS the plugin's account may not patch the Node itself: %s" % p.stderr.strip().splitlines()[0])

        with open(node.events_file, "a") as f:
            f.write("".join("xid %d 32\n" % i for i in range(8)))
        node.wait("the rate limit said", lambda: "over the rate limit" in node.log_tail("plugin", 20000), timeout=30)
        n = len(gpulet_events(node)) - n0
        minutes = (time.time() - t1) / 60
        check(10 <= n <= 10 + minutes + 1, "%d events from one plugin in %.1f min: not the burst of 10 and one a minute"
              % (n, minutes))
        print("PASS rate limit: %d events in %.1f min, the rest dropped and logged" % (n, minutes))
    print("PASS test_node_health (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_node_health()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
