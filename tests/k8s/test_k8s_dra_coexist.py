#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One GPU, one advertiser: `gpulet plugin` and `gpulet dra` on the same real 1.34 node
(tests/k8s/node.py, control plane; docs/reference/dra.md §13). Sampled every 0.2 s throughout, the
node never shows GPUs in both its allocatable nvidia.com/gpu and the DRA pool at once:

  * the device plugin advertises the 8 GPUs; gpulet dra starts, registers with kubelet and publishes
    its pool without devices while the Node shows the device plugin's resources; the plugin sees the
    DRA driver registered and withdraws (allocatable 0); then the pool gets its 13 devices;
  * a DRA claim's pod runs; a pod asking for nvidia.com/gpu stays Pending;
  * gpulet dra stops: the plugin waits until kubelet has wiped the driver's slices (30 s) before it
    advertises the GPUs again, and the Pending pod then runs;
  * gpulet dra again: the same hand-over.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dralib import (BUSYBOX_IMAGE, NODE_NAME, Node, apply, check, claim, delete_pod, pod, pool, request,  # noqa: E402
                    setup_classes, slices, start_dra, stop_dra, timed, wait_running)

ATTR = "device.attributes['gpu.nvidia.com']"


class Sampler(threading.Thread):
    """(the DRA pool's devices, allocatable nvidia.com/gpu) every 0.2 s: the pool read first, so a pool
    published after the Node lost its GPUs is never paired with the Node from before."""

    def __init__(self, node):
        super().__init__(daemon=True)
        self.node, self.samples, self.stop = node, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                devs = sum(len(s["spec"].get("devices", [])) for s in slices(self.node))
                alloc = int(self.node.node_json()["status"].get("allocatable", {}).get("nvidia.com/gpu", "0"))
                self.samples.append((time.time(), devs, alloc))
            except Exception:  # noqa: BLE001 - kubectl racing the node's restarts
                pass
            time.sleep(0.2)

    def both(self):
        return [s for s in self.samples if s[1] > 0 and s[2] > 0]


def gpu_pod(name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"hostNetwork": True, "automountServiceAccountToken": False, "enableServiceLinks": False,
                     "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "c", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                                     "command": ["/bin/sh", "-c", "echo PROBE-DONE; exec sleep 3600"],
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def allocatable(node):
    return node.gpu_capacity()[1]


def hand_over(node, sampler, what):
    t = time.time()
    start_dra(node, wait_published=False)
    node.wait("the plugin withdraws", lambda: allocatable(node) == "0", timeout=30, proc="plugin")
    node.wait("the pool gets its devices", lambda: len(pool(node)) == 13, timeout=30, proc="dra")
    log = node.log_tail("dra", 10 ** 8)
    check("A device plugin advertises GPUs on this node" in log, "gpulet dra did not say it waited: " + log[-2000:])
    check("A DRA driver for NVIDIA GPUs is registered on this node" in node.log_tail("plugin", 10 ** 8),
          "the plugin did not say why it withdrew")
    check(not sampler.both(), "both advertised at once: %s" % sampler.both()[:5])
    timed("%s: the plugin withdraws, then gpulet dra publishes; never both (%d samples)" % (what, len(sampler.samples)), t)


def main():
    t0 = time.time()
    with Node() as node:
        node.start(control_plane=True)
        setup_classes(node)
        sampler = Sampler(node)
        sampler.start()
        node.wait("the sampler sees the plugin's GPUs", lambda: len([s for s in sampler.samples if s[2] == 8]) >= 3,
                  timeout=30)
        timed("node up, the device plugin advertising 8 GPUs", t0)
        try:
            hand_over(node, sampler, "gpulet dra starts beside the device plugin")

            t = time.time()
            apply(node, claim("c1", [request("gpu", cel=ATTR + ".index == 1")]), pod("p1", "true", claim_name="c1"),
                  gpu_pod("dp"))
            wait_running(node, "p1")
            time.sleep(2)
            check(node.get("pod", "dp")["status"]["phase"] == "Pending", "the device-plugin pod runs beside DRA")
            timed("a DRA claim's pod runs; a pod asking for nvidia.com/gpu stays Pending", t)

            t = time.time()
            delete_pod(node, "p1")
            stop_dra(node)
            node.wait("kubelet wipes the driver's slices", lambda: not slices(node), timeout=60)
            node.wait("the plugin advertises again", lambda: allocatable(node) == "8", timeout=30, proc="plugin")
            wait_running(node, "dp")
            check(not sampler.both(), "both advertised at once: %s" % sampler.both()[:5])
            timed("gpulet dra gone: the plugin waits for the wipe, then advertises; the Pending pod runs", t)
            delete_pod(node, "dp")

            hand_over(node, sampler, "gpulet dra again")
        finally:
            sampler.stop.set()
            sampler.join()
        check(NODE_NAME and len(sampler.samples) > 50, "too few samples: %d" % len(sampler.samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
