#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""On a real node (tests/k8s/node.py: etcd, kube-apiserver, kubelet 1.34, containerd 2 with CDI),
gpulet's plugin on the fake dgx-a100 (8 A100s, GPUs 6 and 7 MIG-enabled):

  * the node object shows nvidia.com/gpu: 8 in capacity and allocatable (the field guide's check);
  * a pod with nodeName asking for 1 GPU runs, under cdi-cri and then cdi-annotations, with exactly
    its GPU's device nodes (the host's major:minor, no other GPU's), the control nodes, every file
    the spec mounts, the spec's env and an ld.so.cache that maps libcuda.so.1;
  * a pod asking for all 8 GPUs gets every GPU node, the MIG-enabled ones included (the MIG-under-none
    case: before the fix their CDI names resolved in no spec and containerd failed the container).

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node import Node, NodeError  # noqa: E402

KIND = "k8s.device-plugin.nvidia.com/gpu"


def check(cond, msg):
    if not cond:
        raise NodeError(msg)


def spec(node):
    with open(os.path.join(node.cdi_dir, "k8s.device-plugin.nvidia.com-gpu.json")) as f:
        return json.load(f)


def probe_script(sp):
    """What the container prints: its char devices with major:minor (hex, as stat %t:%T), its env,
    which of the spec's mounted files exist, and how ld.so.cache maps libcuda.so.1."""
    paths = sorted({m["containerPath"] for m in sp["containerEdits"].get("mounts", [])})
    lines = ["for f in /dev/nvidia* /dev/nvidia-caps/* /dev/dri/*; do [ -c \"$f\" ] && "
             "echo \"DEV $f $(stat -c %t:%T \"$f\")\"; done",
             "env | sed 's/^/ENV /'"]
    lines += ["[ -e '%s' ] && echo 'HAVE %s' || echo 'MISS %s'" % (p, p, p) for p in paths]
    lines.append("[ -s /etc/ld.so.cache ] && echo \"LDCACHE $(grep -c libcuda.so.1 /etc/ld.so.cache)\" "
                 "|| echo 'LDCACHE none'")
    return "\n".join(lines) + "\ntrue\n"


def parse(log):
    devs = {}
    for m in re.finditer(r"^DEV (\S+) ([0-9a-f]+):([0-9a-f]+)$", log, re.M):
        devs[m.group(1)] = (int(m.group(2), 16), int(m.group(3), 16))
    env = dict(line[4:].split("=", 1) for line in log.splitlines() if line.startswith("ENV ") and "=" in line)
    have = set(re.findall(r"^HAVE (\S+)$", log, re.M))
    miss = set(re.findall(r"^MISS (\S+)$", log, re.M))
    ld = re.search(r"^LDCACHE (\S+)$", log, re.M)
    return devs, env, have, miss, ld.group(1) if ld else None


def host_rdev(node, path):
    st = os.stat(os.path.join(node.root, path.lstrip("/")))
    return os.major(st.st_rdev), os.minor(st.st_rdev)


def gpu_nodes(devs):
    return {p for p in devs if re.fullmatch(r"/dev/nvidia[0-9]+", p)}


def check_pod(node, name, want_gpus, annotations=None, limits=None):
    sp = spec(node)
    st, log = node.run_pod(name, probe_script(sp), limits or {"nvidia.com/gpu": str(want_gpus)},
                           annotations=annotations)
    check(st.get("phase") == "Succeeded", "pod %s did not succeed: %s\nlog:\n%s\ncontainerd log tail:\n%s"
          % (name, json.dumps(st.get("containerStatuses"), indent=1), log, node.log_tail("containerd", 2000)))
    devs, env, have, miss, ld = parse(log)
    gpus = gpu_nodes(devs)
    check(len(gpus) == want_gpus, "pod %s: %d GPU nodes %s, want %d; its log:\n%s"
          % (name, len(gpus), sorted(gpus), want_gpus, log[-3000:]))
    for p, mm in devs.items():
        check(host_rdev(node, p) == mm, "pod %s: %s is %s inside, %s on the host" % (name, p, mm, host_rdev(node, p)))
    for ctl in ("/dev/nvidiactl", "/dev/nvidia-uvm"):
        check(ctl in devs, "pod %s: control node %s missing (%s)" % (name, ctl, sorted(devs)))
    check(not miss, "pod %s: the spec's mounted files missing inside: %s" % (name, sorted(miss)))
    check(len(have) >= 10, "pod %s: only %d mounted files seen" % (name, len(have)))
    for e in sp["containerEdits"].get("env", []):
        k, v = e.split("=", 1)
        check(env.get(k) == v, "pod %s: env %s=%r, the spec says %r" % (name, k, env.get(k), v))
    check(ld not in (None, "none", "0"), "pod %s: ld.so.cache does not map libcuda.so.1 (%s)" % (name, ld))
    node.delete_pod(name)
    return gpus


def test_gpu_pods():
    t0 = time.time()
    with Node() as node:
        node.start(("--device-list-strategy=cdi-cri",))
        print("node up in %.1fs (peers %.1fs, bring-up %.1fs)" % (time.time() - t0, node.timing["peers_s"],
                                                                   node.timing["bringup_s"]))
        cap = node.gpu_capacity()
        check(cap == ("8", "8"), "capacity/allocatable nvidia.com/gpu %s" % (cap,))
        print("PASS capacity: nvidia.com/gpu 8/8")

        names = {d["name"] for d in spec(node)["devices"]}
        check(len(names) > 8, "spec devices %s" % sorted(names))
        check_pod(node, "one-gpu-cri", 1)
        print("PASS cdi-cri: 1 GPU pod sees its node (host major:minor), control nodes, mounts, env, ld.so.cache")
        check_pod(node, "all-gpus-cri", 8)
        print("PASS cdi-cri: 8 GPU pod, MIG-enabled GPUs 6 and 7 included (MIG under none)")

        node.stop_plugin()
        node.start_plugin("--device-list-strategy=cdi-annotations")
        node.wait_node_ready_for_gpus()
        check_pod(node, "one-gpu-ann", 1)
        print("PASS cdi-annotations: 1 GPU pod")
    print("PASS test_gpu_pods (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_gpu_pods()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
