#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`make cluster-demo` up -> checks -> `make cluster-demo-down` (tests/cluster_demo.py), in a temp dir:

  * up tells its story: kubectl describe node with nvidia.com/gpu, the GPU pod seeing a GPU, CDI off with
    the pod's events beside the doctor's root cause (inject.cdi-disabled), and returns with the node up;
  * after up has exited the node still runs (its holder from holder.pid, kubelet, containerd, gpulet's
    plugin, exporter and doctor), and each command it printed works as printed: kubectl through DIR/kubectl
    and through nsenter with the kubeconfig, the exporter's metrics, the doctor's page;
  * `make cluster-demo-down` (with BUILD pointing at the temp dir) stops it: no process of the node left,
    its cgroups and its dir gone, no mount of it on the host."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("GPULET_BUILD") or os.path.join(SRC, "build")


def check(cond, msg):
    if not cond:
        print("FAIL " + msg)
        raise SystemExit(1)


def alive(pid):
    """Running: a zombie (exited, its new parent has not reaped it yet) does not count."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def ours(d):
    """pids whose command line names the node's dir."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if d.encode() in f.read() and int(pid) != os.getpid():
                    out.append(int(pid))
        except OSError:
            pass
    return out


def main():
    parent = tempfile.mkdtemp(prefix="gpulet-cluster-demo-")
    d = os.path.join(parent, "cluster-demo")
    env = dict(os.environ, GPULET_BUILD=BUILD)
    try:
        r = subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tests", "cluster_demo.py"), "up", "--dir", d],
                           cwd=SRC, env=env, capture_output=True, text=True, timeout=900)
        out = r.stdout
        print(out)
        check(r.returncode == 0, "cluster_demo.py up exited %d:\n%s" % (r.returncode, r.stderr[-3000:]))
        check(re.search(r"^    nvidia.com/gpu: +6$", out, re.M), "kubectl describe node shows no nvidia.com/gpu: 6")
        check(re.search(r"^  devices: .*\bnvidia[0-9]+\b", out, re.M), "the GPU pod saw no GPU")
        nocdi = out.split("One link broken", 1)[-1]
        check("Started" in nocdi and "Root cause: inject.cdi-disabled" in nocdi and
              re.search(r"^  devices: $", nocdi, re.M), "CDI off: the pod's events, no GPU, the doctor's root cause")
        with open(os.path.join(d, "node.json")) as f:
            state = json.load(f)
        holder = int(open(os.path.join(d, "holder.pid")).read())
        check(holder == state["holder"] and alive(holder), "holder.pid names the running holder")
        for name in ("kubelet", "containerd", "kube-apiserver", "etcd", "plugin", "exporter", "doctor"):
            check(alive(state["procs"][name]), "%s still runs after up returned" % name)
        lines = [line.strip() for line in out.split("== Your turn", 1)[1].splitlines()[1:] if line.startswith("  ")]
        check(len(lines) == 5 and lines[-1].startswith("make cluster-demo-down"), "the commands to try: %s" % lines)
        for line in lines[:-1]:
            p = subprocess.run(["bash", "-o", "pipefail", "-c", line.split("   #")[0]], cwd=SRC, capture_output=True,
                               text=True, timeout=120)
            check(p.returncode == 0, "%s: exit %d %s" % (line, p.returncode, p.stderr[-2000:]))
            print("ok   %s\n%s" % (line, p.stdout[-400:]))
        check(open(os.path.join(d, "doctor.html")).read().startswith("<!DOCTYPE html>"), "the doctor's page saved")
        p = subprocess.run(["make", "-s", "cluster-demo-down", "BUILD=" + parent], cwd=SRC, capture_output=True,
                           text=True, timeout=300)
        check(p.returncode == 0, "make cluster-demo-down: %s %s" % (p.stdout, p.stderr))
        check(not os.path.exists(d), "the node's dir is gone")
        check(not alive(holder) and not any(alive(pid) for pid in state["procs"].values()), "every daemon stopped")
        check(not ours(d), "processes naming the node's dir: %s" % ours(d))
        check(not [c for c in state["cgroup_dirs"] if os.path.exists(c)], "the node's cgroups are gone")
        with open("/proc/self/mountinfo") as f:
            check(d not in f.read(), "a mount of the node's dir on the host")
        p = subprocess.run(["make", "-s", "cluster-demo-down", "BUILD=" + parent], cwd=SRC, capture_output=True,
                           text=True, timeout=60)
        check(p.returncode == 0 and "no cluster" in p.stdout, "a second down: %s" % p.stdout)
    finally:
        if os.path.exists(os.path.join(d, "node.json")):
            subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tests", "cluster_demo.py"), "down", "--dir", d],
                           env=env, timeout=300)
        shutil.rmtree(parent, ignore_errors=True)
    print("PASS cluster demo: up, the story, the commands to try, down leaving nothing")


if __name__ == "__main__":
    sys.exit(main())
