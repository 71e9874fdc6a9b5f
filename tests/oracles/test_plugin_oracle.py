#!/usr/bin/python3
"""gpulet plugin against NVIDIA's nvidia-device-plugin (k8s-device-plugin oraclelib.KDP, v0.19.3, built
from its Go module by tests/lib/gopeers.py), one after the other on the same fake node and the same kubelet
stand-in (tests/integration/kubelet_standin.py): for each fixture, MIG strategy, device list
strategy and device ID strategy, with and without --pass-device-specs, the resources registered,
the device IDs ListAndWatch sends, and the Allocate response of one and of two devices, field by
field (env, mounts, device specs, annotations, CDI devices), the root's prefix taken out of paths.

NVIDIA's plugin serves its socket in the fixed /var/lib/kubelet/device-plugins and writes its CDI
spec to /var/run/cdi: it runs in a private mount namespace where a tmpfs covers /var/lib and /run,
the stand-in's dir is bound at the socket dir, the root's /proc/driver over /proc/driver (MIG
minors, oracles.md C1) and its /dev over /dev (the plugin stats the control nodes at its own /dev,
as a plugin pod sees the host's); the fake NVML through LD_LIBRARY_PATH, the root as driver root,
dev root and container driver root. Every difference must match an
ALLOWED entry argued in docs/reference/oracles.md §4.
"""
import collections
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oraclelib  # noqa: E402
import plugin_lib  # noqa: E402
from plugin_lib import FAKE_NVML_LIB  # noqa: E402
from test_cdi_testlib import check, finish  # noqa: E402

# (fixture, MIG strategy, resources to allocate from)
NODES = [("single-t4", "none", ["nvidia.com/gpu"]), ("pcie-4gpu", "none", ["nvidia.com/gpu"]),
         ("dgx-a100", "mixed", ["nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb"])]
LISTS = ["envvar", "volume-mounts", "cdi-annotations", "cdi-cri"]
IDS = ["uuid", "index"]
ALLOWED = [
    (r"order:(envs|annotations|cdi):index", "P1", "sometimes"),  # Go map order: each run differs
    (r"devices-duplicates", "P2"),
]
NS = ('mount --bind "$0/proc/driver" /proc/driver && mount --bind "$0/dev" /dev && mount -t tmpfs none /var/lib && '
      'mkdir -p /var/lib/kubelet/device-plugins && mount --bind "$1" /var/lib/kubelet/device-plugins && '
      'mount -t tmpfs none /run && shift && exec "$@"')


def fields(cr, root):
    n = lambda s: s.replace(root, "") if s else s  # noqa: E731
    return {"envs": dict(cr.envs), "mounts": sorted((m.container_path, n(m.host_path), m.read_only) for m in cr.mounts),
            "devices": sorted((d.container_path, n(d.host_path), d.permissions) for d in cr.devices),
            # the annotation key ends in a fresh UUID per Allocate (device-plugin.md; both do so)
            "annotations": {re.sub(r"_[0-9a-f-]{36}$", "_<uuid>", k): v for k, v in cr.annotations.items()},
            "cdi": [c.name for c in cr.cdi_devices]}


def session(h, start, resources):
    """Start a plugin, read what it registers and lists, allocate one and two devices per resource."""
    mark = h.events.mark()
    stop = start()
    try:
        out = {}
        for res in resources:
            try:
                ev = h.wait_list(res, start=mark, timeout=30)
            except AssertionError as e:
                log = os.path.join(h.tmp, "upstream.log")
                out[res + " ids"] = "no ListAndWatch: %s %s" % (e, open(log).read()[-1500:] if os.path.exists(log) else "")
                continue
            ids = sorted(d["id"] for d in ev["devices"])
            out[res + " ids"] = ids
            for want in ([ids[0]], ids[:2][::-1]) if len(ids) > 1 else ([ids[0]],):
                r = h.allocate(res, want)
                out["%s Allocate(%s)" % (res, ",".join(want))] = fields(r.container_responses[0], h.root)
        return out
    finally:
        stop()


def upstream(h, binary, args, procs=None):
    """A starter of NVIDIA's plugin (procs["upstream"] gets its Popen: unshare and sh exec it)."""
    def start():
        log = open(os.path.join(h.tmp, "upstream.log"), "a")
        env = h.plugin_env({"LD_LIBRARY_PATH": os.path.dirname(FAKE_NVML_LIB)})
        p = subprocess.Popen(["unshare", "-m", "sh", "-c", NS, h.root, h.dp, binary, "--kubelet-socket",
                              "/var/lib/kubelet/device-plugins/kubelet.sock", "--driver-root", h.root, "--dev-root",
                              h.root, "--container-driver-root", h.root, "--fail-on-init-error"] + args, stdout=log,
                             stderr=subprocess.STDOUT, env=env)
        if procs is not None:
            procs["upstream"] = p

        def stop():
            p.terminate()
            p.wait(10)
            log.close()
        return stop
    return start


def ours(h, args):
    def start():
        h.log = open(h.log_path, "a")
        h.plugin = subprocess.Popen([os.environ["GPULET"], "plugin", *h.base_args(), *args], stdout=h.log,
                                    stderr=subprocess.STDOUT, env=h.plugin_env())

        def stop():
            check(h.stop_plugin() == 0, "gpulet plugin did not stop cleanly")
        return stop
    return start


def items(v):
    """The device list a field carries, split: env and annotation values are comma lists."""
    if isinstance(v, dict):
        return sorted((k, tuple(sorted(str(x).split(",")))) for k, x in v.items())
    return sorted(v)


def classify(field, a, b, id_strategy):
    """A field's difference as an allow-list key: the same devices in another order, the same
    entries with duplicates, or a plain difference."""
    if items(a) == items(b):
        return "order:%s:%s" % (field, id_strategy)
    if field == "devices" and sorted(set(a)) == sorted(set(b)):
        return "devices-duplicates"
    return field


def compare(case, id_strategy, theirs, mine, allow, per_arg):
    for k in sorted(set(theirs) | set(mine)):
        a, b = theirs.get(k), mine.get(k)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            diffs = [(classify(f, a[f], b.get(f), id_strategy), "%s %r vs %r" % (k, a[f], b.get(f)))
                     for f in a if a[f] != b.get(f)]
        else:
            diffs = [("value:" + k, "%r vs %r" % (a, b))]
        for key, detail in diffs:
            arg = allow.argument(key)
            if arg is None:
                check(False, "%s: %s -- NVIDIA %s" % (case, key, detail))
            else:
                per_arg[arg] += 1


def main():
    t0 = time.monotonic()
    bins = oraclelib.build_kdp()
    print("nvidia-device-plugin %s ready in %.1f s" % (oraclelib.KDP[2], time.monotonic() - t0))
    allow = oraclelib.AllowList(ALLOWED)
    per_arg = collections.Counter()
    for fx, mig, resources in NODES:
        h = plugin_lib.Harness(fx, ["--with-fakenvml"])
        try:
            h.start_standin()
            for lst in LISTS:
                for ids in IDS:
                    for specs in ([], ["--pass-device-specs"]):
                        args = ["--mig-strategy", mig, "--device-list-strategy", lst, "--device-id-strategy", ids] + specs
                        case = "%s %s" % (fx, " ".join(args))
                        theirs = session(h, upstream(h, bins["nvidia-device-plugin"], args), resources)
                        mine = session(h, ours(h, args), resources)
                        compare(case, ids, theirs, mine, allow, per_arg)
                        print("%s: compared %d answers" % (case, len(theirs)))
        finally:
            h.close()
    for p in allow.problems():
        check(False, p)
    print("allowed differences by argument (docs/reference/oracles.md):",
          ", ".join("%s %d" % kv for kv in sorted(per_arg.items())))
    return finish("gpulet's ListAndWatch and Allocate answers match nvidia-device-plugin %s but for the argued "
                  "differences" % oraclelib.KDP[2])


if __name__ == "__main__":
    sys.exit(main())
