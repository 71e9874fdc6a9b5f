#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`make cluster-demo` / `make cluster-demo-down`: gpulet on a real single-node Kubernetes.

up: the node of tests/k8s/node.py in DIR (default build/cluster-demo): etcd, kube-apiserver, kubelet
1.34 and containerd 2 with CDI, built from their Go modules into ~/.cache/gpulet-peers (minutes the first
time, then found at once), all in a private mount + network namespace, with fake GPUs (the fake NVML
on a simulated DGX A100). On it gpulet's plugin, exporter and doctor daemon. The story: `kubectl describe
node` with nvidia.com/gpu, a GPU pod printing what it sees, one link broken (CDI off in containerd) with the
pod's events beside the doctor's verdict, the link mended. The node then stays up in the background
(DIR/holder.pid; DIR/kubectl runs kubectl in the node's namespaces) and the commands to try are printed.

down: stops every daemon and pod of the node in DIR, removes its cgroups and DIR.

usage: cluster_demo.py up|down [--dir DIR]
"""
import argparse
import json
import os
import re
import shlex
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "k8s"))
from node import FAKE_NVML_LIB, GPULET, NODE_NAME, Node, NodeError  # noqa: E402

MARK = ".gpulet-cluster-demo"  # a DIR holding it is ours to stop and remove
EXPORTER, DOCTOR = "127.0.0.1:9400", "127.0.0.1:9402"  # in the node's network namespace
SEES = ("echo \"devices: $(ls /dev | grep '^nvidia' | tr '\\n' ' ')\"; "
        "echo \"NVIDIA_VISIBLE_DEVICES=${NVIDIA_VISIBLE_DEVICES:-(unset)}\"; "
        "ls /usr/lib/x86_64-linux-gnu 2>/dev/null | grep -c '^libnvidia' | sed 's/^/driver libraries: /'")


def rel(path):
    r = os.path.relpath(path)
    return path if r.startswith("..") else r


def step(title):
    print("\n== %s" % title, flush=True)


def indent(text, keep=None):
    lines = [line for line in text.rstrip("\n").splitlines() if keep is None or keep(line)]
    print("\n".join("  " + line for line in lines), flush=True)


def describe(node):
    """kubectl describe node: its GPU lines (capacity, allocatable, allocated)."""
    out = node.kubectl("describe", "node", NODE_NAME)[1]
    sections, keep, shown = ("Capacity:", "Allocatable:", "Allocated resources:"), False, []
    for line in out.splitlines():
        if line and not line.startswith(" "):
            keep = line.startswith(sections)
            if keep:
                shown.append(line)
            continue
        if keep and ("nvidia.com/" in line or "Resource" in line or "-------" in line):
            shown.append(line)
    return "\n".join(shown)


def daemons(node):
    """The exporter and the doctor as the chart runs them, on the node's files (its root is / inside
    the node's mount namespace, the driver under the fake root)."""
    common = ["--nvml-library", FAKE_NVML_LIB, "--root", node.root]
    node.spawn("exporter", [GPULET, "exporter", "--address", EXPORTER, "--nvml-library", FAKE_NVML_LIB, "--root",
                            "/", "--kubernetes=true"], env=node.plugin_env())
    node.spawn("doctor", [GPULET, "doctor", *common, "--live", "--runtime-class", "", "--serve-metrics", DOCTOR,
                          "--node-name", NODE_NAME, "--recheck-delay", "1"], env=node.plugin_env())
    for name, addr in (("exporter", EXPORTER), ("doctor", DOCTOR)):
        node.wait("%s on %s" % (name, addr), lambda addr=addr: "gpulet_" in curl(node, addr, "/metrics"),
                  timeout=60, proc=name)


def curl(node, addr, path):
    import subprocess
    return subprocess.run(node.ns(["curl", "-s", "--max-time", "5", "http://%s%s" % (addr, path)]),
                          capture_output=True, text=True).stdout


def doctor_verdict(node):
    """The doctor's text report with --pods/--node/--events from the API server: the failures, root cause, fix."""
    import subprocess
    args = []
    for what, q in (("pods", ("get", "pods", "-A")), ("node", ("get", "node", NODE_NAME)),
                    ("events", ("get", "events", "-A"))):
        path = os.path.join(node.t, "doctor-%s.json" % what)
        with open(path, "w") as f:
            f.write(node.kubectl(*q, "-o", "json")[1])
        args += ["--" + what, path]
    p = subprocess.run([GPULET, "doctor", "--root", node.root, "--live", "--nvml-library", FAKE_NVML_LIB,
                        "--runtime-class", "", *args], capture_output=True, text=True, env=node.plugin_env(),
                       timeout=120)
    return p.returncode, p.stdout


def pod_events(node, name):
    return "\n".join("%-10s %-8s %s" % (reason, comp or "", msg) for reason, comp, msg in node.events_of(name))


def up(d):
    if os.path.exists(os.path.join(d, Node.STATE)):
        raise SystemExit("cluster-demo: a cluster is up in %s: make cluster-demo-down first" % rel(d))
    if os.path.exists(d) and set(os.listdir(d)) <= {"logs", MARK}:
        shutil.rmtree(d)  # the logs of a failed earlier try
    t0 = time.time()
    node = Node(keep_logs_on_failure=True, tmp=d)
    open(os.path.join(d, MARK), "w").close()
    try:
        step("A real node in %s: etcd, kube-apiserver, kubelet 1.34, containerd 2 with CDI (own namespaces)" % rel(d))
        node.start(("--device-list-strategy=cdi-cri", "--mig-strategy=mixed"), gpus="6")
        print("  up in %.0fs (peers from ~/.cache/gpulet-peers: %.0fs of it)" % (time.time() - t0,
                                                                               node.timing["peers_s"]))
        daemons(node)
        print("  gpulet plugin registered with kubelet; gpulet exporter on %s, gpulet doctor on %s" % (EXPORTER,
                                                                                                  DOCTOR))

        step("kubectl describe node %s" % NODE_NAME)
        indent(describe(node))

        step("A GPU pod (limits nvidia.com/gpu: 1) prints what it sees")
        st, log = node.run_pod("gpu-pod", SEES, {"nvidia.com/gpu": "1"})
        indent(log)
        if st.get("phase") != "Succeeded" or not re.search(r" nvidia[0-9]+ ", log):
            raise NodeError("the GPU pod did not see a GPU: %s %s" % (json.dumps(st)[:800], log))

        step("One link broken: CDI off in containerd (enable_cdi = false, containerd restarted)")
        node.restart_containerd(enable_cdi=False)
        st, log = node.run_pod("gpu-pod-nocdi", SEES, {"nvidia.com/gpu": "1"})
        print("  the pod ran (%s) and saw:" % st.get("phase"))
        indent(log, lambda line: True)
        print("  its events:")
        indent(pod_events(node, "gpu-pod-nocdi"))
        rc, report = doctor_verdict(node)
        print("  the doctor (exit %d):" % rc)
        indent(report, lambda line: line.startswith(("Root cause:", "Fix first:")) or " FAIL " in line)
        if "Root cause: inject.cdi-disabled" not in report:
            raise NodeError("the doctor did not name CDI off:\n" + report)
        node.delete_pod("gpu-pod-nocdi")
        node.restart_containerd(enable_cdi=True)
        print("  CDI turned on again; containerd restarted")
        node.detach()
    except BaseException:
        node.failed = True
        node.stop()
        raise
    tools(d, node)
    step("Your turn: the cluster stays up (run these from this directory)")
    for line in try_lines(d):
        print("  " + line)
    print("\nTook %.0fs" % (time.time() - t0))
    return 0


def tools(d, node):
    """DIR/kubectl: kubectl in the node's namespaces with the admin kubeconfig."""
    path = os.path.join(d, "kubectl")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n# kubectl on the cluster of `make cluster-demo` (its API server listens in the node's "
                "network namespace)\nexec nsenter -t \"$(cat %s)\" -m -n -- %s --kubeconfig %s \"$@\"\n"
                % (shlex.quote(os.path.join(d, "holder.pid")), shlex.quote(node.bins["kubectl"]),
                   shlex.quote(node.admin_kubeconfig)))
    os.chmod(path, 0o755)


def try_lines(d):
    pid = "$(cat %s)" % rel(os.path.join(d, "holder.pid"))
    return [
        "%s get nodes,pods -A" % rel(os.path.join(d, "kubectl")),
        "nsenter -t %s -m -n --wd=\"$PWD\" -- %s --kubeconfig %s describe node %s" % (
            pid, rel(Node.attach(d).bins["kubectl"]), rel(os.path.join(d, "admin.kubeconfig")), NODE_NAME),
        "nsenter -t %s -n -- curl -s http://%s/metrics | grep ^DCGM_FI_DEV_GPU_TEMP   # the exporter" % (pid, EXPORTER),
        "nsenter -t %s -n -- curl -s http://%s/ > %s   # the doctor's page" % (pid, DOCTOR,
                                                                           rel(os.path.join(d, "doctor.html"))),
        "make cluster-demo-down   # stops it all, removes %s and its cgroups" % rel(d),
    ]


def down(d):
    if not os.path.exists(os.path.join(d, MARK)):
        print("cluster-demo: no cluster in %s" % rel(d))
        return 0
    if os.path.exists(os.path.join(d, Node.STATE)):
        Node.attach(d).stop()
    shutil.rmtree(d, ignore_errors=True)
    print("cluster-demo: stopped; %s and its cgroups removed" % rel(d))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("up", "down"))
    ap.add_argument("--dir", default=os.path.join(os.environ.get("GPULET_BUILD", "build"), "cluster-demo"))
    a = ap.parse_args()
    try:
        return (up if a.action == "up" else down)(os.path.abspath(a.dir))
    except NodeError as e:
        print("cluster-demo: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
