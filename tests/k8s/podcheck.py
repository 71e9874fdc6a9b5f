#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What a pod on the real node sees of its GPUs, checked against the plugin's CDI spec and the fake
node root: the probe script the container runs, its output parsed, and the checks (tests/k8s)."""
import json
import os
import re

from node import NodeError

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


def check_pod(node, name, want_gpus, annotations=None, limits=None, want_caps=0):
    """Run a probe pod asking for want_gpus nvidia.com/gpu (or limits) and check what it sees;
    returns its GPU nodes and its nvidia-caps nodes."""
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
    caps = {p for p in devs if p.startswith("/dev/nvidia-caps/")}
    check(len(caps) == want_caps, "pod %s: nvidia-caps nodes %s, want %d" % (name, sorted(caps), want_caps))
    node.delete_pod(name)
    return gpus, caps
