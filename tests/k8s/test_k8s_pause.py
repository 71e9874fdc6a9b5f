#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The GPU Operator's pause protocol on the chart's DaemonSets (issue 32 item 4), on the real node of
tests/k8s with kube-scheduler and the DaemonSet controller: every DaemonSet of the chart, rendered by
`helm template` with its affinity, tolerations and labels as they are, its pods a sleeping busybox
(chartapi.stand_in: no gpulet image here), runs on the GPU node; then the node labels are flipped the
way the Operator's tools flip them (docs/reference/helm-chart.md "Pause labels") and the pods leave and
come back:

  * mig-manager's shutdown (mig-parted pkg/mig/reconfigure: device-plugin, gpu-feature-discovery and
    dcgm-exporter labels set to paused-for-mig-change): the plugin, the MPS control daemons, GFD, the
    exporter and the doctor (which follows the device plugin's label) all leave; set back to "true", all
    come back;
  * the driver upgrade (k8s-driver-manager: paused-for-driver-upgrade, and over a MIG pause
    paused-for-mig-change_paused-for-driver-upgrade): the plugin and those that follow it leave;
  * false on one operand's label stops that one alone (the doctor's own label included); a label that is
    absent or "" runs them (the chart runs without the Operator too).

Fails on a chart whose DaemonSets do not select on the labels (nothing leaves). Without the registries
(Go module proxy, npm) the peers cannot be built and the test fails."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chartapi import RbacNode, grant, pods_of, render, run_daemonsets  # noqa: E402
from node import NODE_NAME, NodeError  # noqa: E402

ALL = {"device-plugin", "mps-control-daemon", "gpu-feature-discovery", "exporter", "doctor"}
PLUGIN = "nvidia.com/gpu.deploy.device-plugin"
GFD = "nvidia.com/gpu.deploy.gpu-feature-discovery"
EXPORTER = "nvidia.com/gpu.deploy.dcgm-exporter"
DOCTOR = "nvidia.com/gpu.deploy.gpulet-doctor"
FOLLOW_PLUGIN = {"device-plugin", "mps-control-daemon", "doctor"}

# (what the step stands for, labels to set (None: remove), the components that run after it)
STEPS = [
    ("mig-manager pauses the GPU clients", {PLUGIN: "paused-for-mig-change", GFD: "paused-for-mig-change",
                                            EXPORTER: "paused-for-mig-change"}, set()),
    ("mig-manager is done: true again", {PLUGIN: "true", GFD: "true", EXPORTER: "true"}, ALL),
    ("the driver upgrade pauses the plugin", {PLUGIN: "paused-for-driver-upgrade"}, ALL - FOLLOW_PLUGIN),
    ("a driver upgrade over a MIG pause", {PLUGIN: "paused-for-mig-change_paused-for-driver-upgrade"},
     ALL - FOLLOW_PLUGIN),
    ("the upgrade is done", {PLUGIN: "true"}, ALL),
    ("GFD disabled on this node", {GFD: "false"}, ALL - {"gpu-feature-discovery"}),
    ("the exporter disabled", {GFD: None, EXPORTER: "false"}, ALL - {"exporter"}),
    ("the doctor disabled by its own label", {EXPORTER: "", DOCTOR: "false"}, ALL - {"doctor"}),
    ("no Operator labels at all", {PLUGIN: None, EXPORTER: None, DOCTOR: None}, ALL),
]


def running(node):
    return {c for c in ALL if pods_of(node, c)}


def test_pause():
    t0 = time.time()
    with RbacNode() as node:
        node.start(control_plane=True)
        node.kubectl("label", "node", NODE_NAME, "nvidia.com/gpu.present=true", "nvidia.com/mps.capable=true")
        docs = render({"gfd": {"enabled": True}})
        for comp in ("device-plugin", "gpu-feature-discovery", "doctor"):
            grant(node, comp, docs=docs)
        names = run_daemonsets(node, docs, ALL)
        if {c for c, _ in names} != ALL:
            raise NodeError("the chart renders DaemonSets for %s, expected %s" % (names, sorted(ALL)))
        node.wait("every DaemonSet's pod running", lambda: running(node) == ALL, timeout=120)
        print("PASS the chart's %d DaemonSets run on the GPU node" % len(ALL))
        for what, labels, want in STEPS:
            args = [("%s-" % k) if v is None else "%s=%s" % (k, v) for k, v in labels.items()]
            t = time.time()
            node.kubectl("label", "node", NODE_NAME, "--overwrite", *args)
            # and nothing left terminating: the pods are gone, not only going
            node.wait("%s: running %s" % (what, sorted(want)), lambda: running(node) == want and all(
                not pods_of(node, c) and not node.get("pods", "-n", "gpulet", "-l",
                                                      "app.kubernetes.io/component=" + c)["items"]
                for c in ALL - want), timeout=120)
            print("PASS %s (%s): %s run, %s left (%.1f s)" % (what, " ".join(args), sorted(want) or "none",
                                                              sorted(ALL - want) or "none", time.time() - t))
    print("PASS test_pause (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_pause()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
