#!/usr/bin/python3
"""What the oracle tests share (not a test itself): NVIDIA's own tools built from their Go modules
(tests/lib/gopeers.py), run on the fake node roots of tests/lib/mkroot.sh against the fake NVML, and
an allow-list of differences where each entry cites its argument in docs/reference/oracles.md."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import gopeers  # noqa: E402

# The releases the comparisons are made against (the issue asks nvidia-container-toolkit v1.20.x).
CTK = ("nvidia-container-toolkit", "github.com/NVIDIA/nvidia-container-toolkit", "v1.20.2")
DOC = os.path.join(HERE, "..", "..", "docs/reference/oracles.md")


def build_ctk():
    """nvidia-ctk and nvidia-cdi-hook; cgo: go-nvml dlopens libnvidia-ml through cgo."""
    name, module, version = CTK
    return gopeers.build(name, module, version, [module + "/cmd/nvidia-ctk", module + "/cmd/nvidia-cdi-hook"],
                         cgo=True)


def in_node_proc(root, argv):
    """argv in a private mount namespace whose /proc/driver is the fake root's: nvidia-ctk reads
    /proc/driver/nvidia-caps/mig-minors of the host, whatever --driver-root says (oracles.md C1);
    and whose /dev is the root's, so nothing a tool does to /dev reaches the host's."""
    return ["unshare", "-m", "sh", "-c", 'mount --bind "$0/proc/driver" /proc/driver && mount --bind "$0/dev" /dev && '
            'shift && exec "$@"', root, "--"] + list(argv)


class AllowList:
    """(regex over a difference's key, argument id in docs/reference/oracles.md[, "sometimes"]). A
    difference no entry matches fails the test; so does an entry that matched nothing (a stale
    argument; "sometimes" exempts one whose difference depends on chance upstream) and an id the
    document does not argue."""

    def __init__(self, entries):
        self.entries = [(re.compile(e[0]), e[1]) for e in entries]
        self.sometimes = {e[0] for e in entries if len(e) > 2 and e[2] == "sometimes"}
        self.used = set(self.sometimes)

    def argument(self, key):
        for rx, arg in self.entries:
            if rx.fullmatch(key):
                self.used.add(rx.pattern)
                return arg
        return None

    def problems(self):
        with open(DOC) as f:
            doc = f.read()
        out = ["allow-list entry %r matched no difference: drop it (or its argument)" % rx.pattern
               for rx, _ in self.entries if rx.pattern not in self.used]
        out += ["allow-list id %s has no row '| %s |' in docs/reference/oracles.md" % (arg, arg)
                for arg in sorted({a for _, a in self.entries}) if "| %s |" % arg not in doc]
        return out


# The newest release the module proxy serves (tried on 2026-12-06: v0.18.0-v0.18.2 and v0.19.0-v0.19.3
# are served and build, v0.20.0 is "not available"; docs/reference/oracles.md). Its node-feature-discovery
# (v0.18.3) is served too, so nothing is replaced.
KDP = ("k8s-device-plugin", "github.com/NVIDIA/k8s-device-plugin", "v0.19.3")


def build_kdp():
    """gpu-feature-discovery and nvidia-device-plugin; cgo for go-nvml."""
    name, module, version = KDP
    return gopeers.build(name, module, version,
                         [module + "/cmd/gpu-feature-discovery", module + "/cmd/nvidia-device-plugin"], cgo=True)
