#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The test node changes nothing outside its own dirs (tests/k8s/node.py): the host's well-known
kubelet, containerd, CNI and CDI paths are the same before a node ran a GPU pod and after it stopped
(what exists, its type, mode, size and mtime, three levels down), and every directory kubelet was
told to use (its FLAG lines) is the node's own or one the node's namespace covers. kubelet's
default volume plugin dir, /usr/libexec/kubernetes/kubelet-plugins/volume/exec, was made on the host."""
import os
import re
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node import KUBELET_ROOT, Node  # noqa: E402
from podcheck import check  # noqa: E402

# where kubelet, containerd, CNI plugins and CDI keep things on a real node
WELL_KNOWN = ("/var/lib/kubelet", "/usr/libexec/kubernetes", "/etc/kubernetes", "/etc/cni", "/opt/cni",
              "/var/lib/cni", "/var/run/cdi", "/run/cdi", "/etc/cdi", "/run/containerd", "/var/run/containerd",
              "/var/lib/containerd", "/etc/containerd", "/opt/containerd", "/var/log/pods", "/var/log/containers",
              "/run/nvidia", "/etc/nvidia-container-runtime")
DEPTH = 3
# paths inside the node's private mount namespace (tmpfs or bound from the node's dir): never the host's
NAMESPACED = (KUBELET_ROOT, "/run", "/var/run", "/var/log", "/var/lib", "/opt")


def snapshot():
    """{path: (type, mode, size, mtime_ns)} of the well-known paths and what lies below them."""
    out = {}

    def walk(p, depth):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return  # nothing there (or gone while we looked: then it differs from the other snapshot)
        out[p] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                  None if stat.S_ISDIR(st.st_mode) else st.st_size, st.st_mtime_ns)
        if stat.S_ISDIR(st.st_mode) and depth:
            try:
                names = sorted(os.listdir(p))
            except (FileNotFoundError, NotADirectoryError):
                return
            for n in names:
                walk(os.path.join(p, n), depth - 1)

    for p in WELL_KNOWN:
        walk(p, DEPTH)
    return out


def kubelet_dirs(node):
    """The directories kubelet was told to keep things in, as it logged its flags at start (klog V(1)
    "FLAG: --name=\"value\""): the --*-dir flags with a path (files it only reads, such as
    /etc/machine-id, are not kubelet's to change)."""
    log = node.log_tail("kubelet", 10 ** 8)
    return {m.group(1): m.group(2) for m in re.finditer(r'FLAG: --([a-z-]+-dir)="(/[^"]*)"', log)}


def test_host_paths():
    t0 = time.time()
    before = snapshot()
    with Node() as node:
        node.start()
        st, log = node.run_pod("host-paths", "echo ran", {"nvidia.com/gpu": "1"})
        check(st.get("phase") == "Succeeded" and "ran" in log, "the GPU pod did not run: %r %r" % (st, log))
        flags = kubelet_dirs(node)
        check("volume-plugin-dir" in flags and "root-dir" in flags, "kubelet logged no FLAG lines: %r" % flags)
        outside = {k: v for k, v in flags.items()
                   if not v.startswith(node.t + "/") and not any(v == d or v.startswith(d + "/") for d in NAMESPACED)}
        check(not outside, "kubelet uses host dirs outside the node's own: %r" % outside)
        print("PASS kubelet's dirs are the node's own (volume-plugin-dir %s)" % flags["volume-plugin-dir"])
    after = snapshot()
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    check(not changed, "the node changed host paths: %s" % ["%s: %r -> %r" % (p, before.get(p), after.get(p))
                                                            for p in changed])
    print("PASS the host's well-known paths are unchanged (%d entries, %.1fs)" % (len(before), time.time() - t0))


if __name__ == "__main__":
    test_host_paths()
