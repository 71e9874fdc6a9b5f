#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet doctor` on the live real node (tests/k8s/node.py; the node's files are readable under
--root R as on a host: R/var/lib/kubelet, R/etc/containerd/config.toml, the driver and /dev of the
fake dgx-a100), with --pods/--node fed from the real API server's JSON:

  * healthy (plugin with CDI and the default --mig-strategy=none on the MIG-enabled GPU 6, which it
    advertises whole on purpose, a pod holding it): exit 0 and no failure (no mig.layout-stale);
  * the plugin's CDI spec deleted: containerd fails the pod's container with "unresolvable CDI
    devices"; the doctor names the missing spec (cdi.spec-missing) and, from --events, quotes that
    error (events.runtime-failed);
  * CDI turned off in containerd's config and containerd restarted: what the pod then sees, and the
    doctor's CDI-disabled root cause;
  * the plugin stopped: the doctor fails, naming the plugin link;
  * kubelet stopped: kubelet.not-running.

At each step the doctor also runs as in its pod (issue 32 item 6): in-cluster, with the chart's doctor
ServiceAccount and its read-only rules exactly as `helm template` renders them (tests/k8s/chartapi.py,
RBAC on), no --pods/--node/--events, reading this node, its pods and their events from the API server
itself; it must name the same root cause and the same failures as with the dumps.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chartapi import RbacNode, in_cluster  # noqa: E402
from node import FAKE_NVML_LIB, GPULET, NODE_NAME, NodeError  # noqa: E402
from podcheck import check  # noqa: E402


def doctor(node, api=True):
    """The doctor's exit code and failures; with api, --pods/--node/--events from the API server
    (kept next to the logs as doctor-*.json for a failure's report). With api, it runs again in-cluster
    (node.in_cluster: the doctor's account) and must find the same."""
    rc, fails = doctor_run(node, api)
    if api:
        want = (rc, node.root_cause, sorted(ids(fails)))
        lrc, lfails = doctor_run(node, api, live=True)
        got = (lrc, node.root_cause, sorted(ids(lfails)))
        check(got == want, "in-cluster the doctor finds %s, with the dumps %s\n%s" % (got, want, show(lfails)))
        check(not [f for f in node.doctor_warnings if f["id"] == "input.api-failed"],
              "in-cluster: %s" % show(node.doctor_warnings))
        print("PASS in-cluster (the chart's doctor account, no dumps): the same exit %d, root cause %s, failures %s"
              % (lrc, node.root_cause, sorted(ids(lfails))))
        node.root_cause = want[1]
    return rc, fails


def doctor_run(node, api, live=False):
    args = []
    queries = (("pods", ("get", "pods", "-A", "-o", "json")), ("node", ("get", "node", NODE_NAME, "-o", "json")),
               ("events", ("get", "events", "-A", "-o", "json")))
    for what, q in queries if api and not live else ():
        path = os.path.join(node.logs, "doctor-%s.json" % what)
        with open(path, "w") as f:
            f.write(node.kubectl(*q)[1])
        args += ["--" + what, path]
    argv = [GPULET, "doctor", "--root", node.root, "--live", "--nvml-library", FAKE_NVML_LIB, "--runtime-class", "",
            *args]
    env = node.plugin_env()
    if live:  # as in the doctor's pod: its account's token, KUBERNETES_SERVICE_HOST, NODE_NAME
        env = dict(node.in_cluster, FAKE_NVML_FIXTURE=env["FAKE_NVML_FIXTURE"], FAKE_NVML_EVENTS=env["FAKE_NVML_EVENTS"],
                   NODE_NAME=NODE_NAME)
        argv = node.ns(argv)
    p = subprocess.run(argv + ["--json"], capture_output=True, text=True, env=env, timeout=120)
    try:
        findings = json.loads(p.stdout)["findings"]
    except ValueError:
        raise NodeError("doctor printed no JSON (rc %d): %s %s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    node.doctor_warnings = [f for f in findings if f["severity"] == "warn"]
    text = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120).stdout
    m = re.search(r"^Root cause: (\S+)", text, re.M)
    node.root_cause = m.group(1) if m else None
    return p.returncode, [f for f in findings if f["severity"] == "fail"]


def show(fails):
    return "\n".join("%s: %s %s" % (f["id"], f["summary"], json.dumps(f.get("evidence"))[:800]) for f in fails)


def ids(fails):
    return [f["id"] for f in fails]


def waiting(st):
    """The container's waiting reason and message (the runtime's error as kubelet reports it)."""
    for cs in st.get("containerStatuses", []):
        w = cs.get("state", {}).get("waiting")
        if w:
            return w.get("reason", ""), w.get("message", "")
    return "", ""


def start_server(node):
    """`gpulet doctor --serve-metrics` as in the chart's pod: in-cluster, its informers on the node and the
    pods bound to it (doctor/cluster_live.c)."""
    env = node.plugin_env()
    env = dict(node.in_cluster, FAKE_NVML_FIXTURE=env["FAKE_NVML_FIXTURE"], FAKE_NVML_EVENTS=env["FAKE_NVML_EVENTS"],
               NODE_NAME=NODE_NAME)
    node.spawn("doctor-serve", [GPULET, "doctor", "--root", node.root, "--live", "--nvml-library", FAKE_NVML_LIB,
                                "--runtime-class", "", "--serve-metrics", "127.0.0.1:19402", "--interval", "300",
                                "--recheck-delay", "1"], env=env)
    node.wait("the doctor's server following the cluster", lambda: "Following this node and its pods" in
              node.log_tail("doctor-serve", 20000) and "gpulet_doctor" in served_metrics(node), timeout=60,
              proc="doctor-serve")
    check('id="input.api-failed"' not in served_metrics(node), "the server: %s" % served_metrics(node)[:2000])


def served_metrics(node):
    p = subprocess.run(node.ns(["curl", "-sS", "--max-time", "5", "http://127.0.0.1:19402/metrics"]),
                       capture_output=True, text=True, timeout=30)
    return p.stdout


def spec_deleted(node):
    path = os.path.join(node.cdi_dir, "k8s.device-plugin.nvidia.com-gpu.json")
    os.unlink(path)
    st, _ = node.run_pod("nospec", "true", {"nvidia.com/gpu": "1"})
    reason, msg = waiting(st)
    check(reason == "CreateContainerError" and "unresolvable CDI devices" in msg,
          "pod with the spec deleted: %s" % json.dumps(st)[:1500])
    print("PASS the spec deleted: the pod sits in %s: %s" % (reason, msg[:200]))
    node.wait("the Failed event of pod nospec", lambda: "unresolvable CDI devices" in
              node.kubectl("get", "events", "-A", "-o", "json")[1], timeout=30)
    # the doctor's server in-cluster: its informers saw the GPU pod fail, it walked again and read the
    # pod's events from the API server
    node.wait("the doctor's server to report events.runtime-failed", lambda: 'id="events.runtime-failed"' in
              served_metrics(node), timeout=60, proc="doctor-serve")
    print("PASS the doctor's server (in-cluster, following the node and its pods) walked again and reports "
          "events.runtime-failed")
    rc, fails = doctor(node)
    print("doctor with the spec deleted: rc %d, root cause %s\n%s\nwarnings:\n%s"
          % (rc, node.root_cause, show(fails), show(node.doctor_warnings)))
    # the running plugin hands out CDI names only: the missing spec is the root cause, and the pod's
    # Failed event (the runtime's own words) is quoted beside it
    check(rc == 1 and node.root_cause == "cdi.spec-missing" and "cdi.spec-missing" in ids(fails),
          "doctor with the spec deleted names no missing spec")
    ev = [f for f in fails if f["id"] == "events.runtime-failed"]
    check(ev and "unresolvable CDI devices" in json.dumps(ev), "doctor does not quote the runtime's error")
    print("PASS doctor with the spec deleted: %s, quoting the runtime's error" % ids(fails))
    node.delete_pod("nospec")
    node.stop_plugin()
    node.start_plugin(*node.plugin_args)
    node.wait("the spec written again", lambda: os.path.exists(path), timeout=30, proc="plugin")
    node.wait_node_ready_for_gpus(count="8")


def cdi_disabled(node):
    """containerd 2 with enable_cdi = false drops the CDI names kubelet passes: no error anywhere,
    the container starts without its GPU (the pod's real failure is what it does not see)."""
    node.restart_containerd(enable_cdi=False)
    st, log = node.run_pod("nocdi", "ls /dev; true", {"nvidia.com/gpu": "1"})
    check(st.get("phase") == "Succeeded" and "nvidiactl" not in log and not re.search(r"^nvidia[0-9]", log, re.M),
          "pod with CDI off: %s\nlog: %s" % (json.dumps(st)[:1000], log))
    print("PASS CDI off in containerd: the 1-GPU pod runs without any /dev/nvidia* node, no error")
    rc, fails = doctor(node)
    print("doctor with CDI off: rc %d, root cause %s\n%s\nwarnings:\n%s"
          % (rc, node.root_cause, show(fails), show(node.doctor_warnings)))
    # the root cause, the runtime's own finding, no missing handler for --runtime-class "" (the default
    # runtime) and no stuck allocation for the Succeeded pod (kubelet frees its GPU at the next Allocate)
    check(rc == 1 and node.root_cause == "inject.cdi-disabled" and "runtime.cdi-disabled" in ids(fails)
          and "runtime.nvidia-handler-missing" not in ids(fails) and "alloc.held-by-terminated-pod" not in ids(fails),
          "doctor with CDI off names no CDI-disabled root cause")
    print("PASS doctor with CDI off in containerd: root cause %s; failures %s" % (node.root_cause, ids(fails)))
    node.delete_pod("nocdi")
    node.restart_containerd(enable_cdi=True)


def test_doctor():
    t0 = time.time()
    with RbacNode() as node:
        node.start(("--device-list-strategy=cdi-cri", "--mig-strategy=none"), gpus="8")
        node.in_cluster = in_cluster(node, "doctor")
        start_server(node)
        node.start_pod("holder", "true", {"nvidia.com/gpu": "1"})
        rc, fails = doctor(node)
        check(rc == 0 and not fails, "doctor on the healthy node: rc %d\n%s" % (rc, show(fails)))
        print("PASS doctor on the healthy live node: exit 0, no failure")

        spec_deleted(node)
        cdi_disabled(node)

        node.stop_proc("doctor-serve")
        node.stop_plugin()
        rc, fails = doctor(node)
        # also failed today, wrongly: alloc.held-by-terminated-pod (the deleted pod nocdi's GPU, which
        # kubelet frees at the next Allocate); mig.layout-stale is explained by the plugin link
        check(rc == 1 and node.root_cause == "plugin.not-registered" and "mig.layout-stale" not in ids(fails),
              "doctor with the plugin stopped: rc %d\n%s" % (rc, show(fails)))
        print("PASS doctor with the plugin stopped: root cause %s\n%s" % (node.root_cause, show(fails)))

        node.stop_proc("kubelet")
        rc, fails = doctor(node)
        # mig.layout-stale is explained by the kubelet link: nothing can be asked of a stopped kubelet
        check(rc == 1 and node.root_cause == "kubelet.not-running" and "mig.layout-stale" not in ids(fails),
              "doctor with kubelet stopped: rc %d\n%s" % (rc, show(fails)))
        print("PASS doctor with kubelet stopped: root cause %s\n%s" % (node.root_cause, show(fails)))
    print("PASS test_doctor (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_doctor()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
