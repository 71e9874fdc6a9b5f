#!/usr/bin/python3
"""gpulet cdi generate against NVIDIA's own nvidia-ctk cdi generate (built from its Go module by
tests/lib/gopeers.py), on the fake node root of every fixture with the fake NVML as the driver's
libnvidia-ml, both run the same way: `--driver-root R --dev-root R --nvidia-cdi-hook-path
/usr/bin/nvidia-cdi-hook --format json`, in one private mount namespace whose /proc/driver is the
root's (nvidia-ctk reads the host's MIG minors table whatever the driver root; oracles.md C1).

The specs are compared device by device (what a container asking for that one device gets: the
spec-level edits plus its own) and so file by file: names, device nodes (path, hostPath, type,
major, minor, fileMode, permissions), mounts (hostPath, containerPath, options), env, hooks with
their arguments and create-symlinks links one by one. Every difference must match an entry of
ALLOWED, whose id is argued in docs/reference/oracles.md; an entry that matches nothing fails too.
"""
import collections
import json
import os
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdidiff  # noqa: E402
import oraclelib  # noqa: E402
from test_cdi_testlib import FAKE, FIXTURES, GPULET, check, finish, fixture_path, load_fixture, mkroot  # noqa: E402

HOOK = "/usr/bin/nvidia-cdi-hook"  # both specs name NVIDIA's hook, so its arguments compare as written
LIBDIR = "/usr/lib/x86_64-linux-gnu"
# name -> extra arguments given to both: the default kind with both name schemes, the specs of the
# device plugin's kind with one scheme each, and NVIDIA's third scheme
VARIANTS = {
    "default": [],
    "plugin-uuid": ["--vendor", "k8s.device-plugin.nvidia.com", "--device-name-strategy", "uuid"],
    "plugin-index": ["--vendor", "k8s.device-plugin.nvidia.com", "--device-name-strategy", "index"],
    "type-index": ["--device-name-strategy", "type-index"],
}
ALLOWED = [
    (r"path\.(major|minor|fileMode|permissions):/dev/.*", "N1"),
    (r"link-as-mount:" + LIBDIR + r"/(vdpau/)?lib[^/]*\.so(\.[0-9]+)?", "L1"),
    (r"env-extra:GPULET_CDI_SPEC", "M1"),
    (r"containerPath-missing:/var/run/nvidia-container-devices/void", "V1"),
    (r"hook-missing:apply-cuda-memory-limits@createRuntime", "H1"),
    (r"hook-missing:update-application-profile@createContainer", "H2"),
    (r"outcome:nvidia-ctk-fails:degraded/[a-z-]+", "O1"),
    (r"outcome:gpulet-refuses:[a-z0-9-]+/type-index", "T1"),
]


def pair_links(items):
    """A library link nvidia-ctk makes with create-symlinks and gpulet mounts (the host's link, so
    the same file) is one difference of its own: link-as-mount (L1)."""
    by_dev = collections.defaultdict(dict)
    for key, where, detail in items:
        by_dev[where][key] = detail
    out = []
    for key, where, detail in items:
        if key.startswith("link-missing:"):
            link = key.split("::", 1)[1]
            if "containerPath-extra:" + link in by_dev[where]:
                out.append(("link-as-mount:" + link, where, detail))
                continue
        if key.startswith("containerPath-extra:"):
            link = key.split(":", 1)[1]
            if any(k.startswith("link-missing:") and k.endswith("::" + link) for k in by_dev[where]):
                continue
        out.append((key, where, detail))
    return out


def node_checked(root, spec, key, where):
    """N1's argument, checked: the value nvidia-ctk wrote is what the runtime reads from the host
    node when gpulet's spec leaves the field out (stat of hostPath; permissions default rwm)."""
    field, path = key[len("path."):].split(":", 1)
    dev = next((d for d in spec["devices"] if "device " + d["name"] == where), None)
    edits = cdidiff.effective(spec, dev or {})
    node = next(n for n in edits["deviceNodes"] if n["path"] == path)
    st = os.stat(node.get("hostPath") or os.path.join(root, path.lstrip("/")))
    host = {"major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev), "fileMode": stat.S_IMODE(st.st_mode),
            "permissions": "rwm"}[field]
    return node.get(field, 0 if field in ("major", "minor") else None) == host


def run_both(bins, fx, root, variant, tmp):
    env = dict(os.environ, FAKE_NVML_FIXTURE=fixture_path(fx))
    common = VARIANTS[variant] + ["--driver-root", root, "--dev-root", root, "--nvidia-cdi-hook-path", HOOK, "--format", "json",
              "--output"]
    out = {}
    for tool, argv in (("nvidia-ctk", [bins["nvidia-ctk"], "cdi", "generate"]),
                       ("gpulet", [GPULET, "cdi", "generate", "--nvml-library", FAKE])):
        os.makedirs(os.path.join(tmp, tool, fx, variant))
        path = os.path.join(tmp, tool, fx, variant, "spec.json")  # one dir each: gpulet refuses to write beside a twin
        r = subprocess.run(oraclelib.in_node_proc(root, argv + common + [path]), env=env, capture_output=True,
                           text=True, timeout=120)
        last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        out[tool] = (json.load(open(path)) if r.returncode == 0 and os.path.exists(path) else None, last)
    return out


def compare_variant(bins, fx, root, variant, tmp, allow, per_arg):
    out = run_both(bins, fx, root, variant, tmp)
    (theirs, their_err), (ours, our_err) = out["nvidia-ctk"], out["gpulet"]
    case = "%s/%s" % (fx, variant)
    items = []  # both refusing (no-gpu: neither writes a spec without devices) is agreement
    if theirs is None and ours is not None:
        items = [("outcome:nvidia-ctk-fails:" + case, "spec", their_err)]
    elif ours is None and theirs is not None:
        items = [("outcome:gpulet-refuses:" + case, "spec", our_err)]
    elif ours is not None:
        ver = load_fixture(fx).get("driver_version", "")
        items = pair_links(cdidiff.compare(theirs, ours, root, ver))
        check(len(theirs["devices"]) > 0 and len(ours["devices"]) == len(theirs["devices"]),
              "%s: %d devices from nvidia-ctk, %d from gpulet" % (case, len(theirs["devices"]), len(ours["devices"])))
    for key, where, detail in items:
        arg = allow.argument(key)
        if arg == "N1" and not node_checked(root, theirs, key.replace("<root>", root), where):
            arg = None  # the runtime would not fill in nvidia-ctk's value: a real difference
        if arg is None:
            check(False, "%s %s: %s -- %s" % (case, where, key, detail))
        else:
            per_arg[arg] += 1
    print("%-26s nvidia-ctk: %-4s gpulet: %-4s differences: %d" % (
        case, len(theirs["devices"]) if theirs else "fail", len(ours["devices"]) if ours else "fail", len(items)))


def main():
    t0 = time.monotonic()
    bins = oraclelib.build_ctk()
    print("nvidia-ctk %s ready in %.1f s: %s" % (oraclelib.CTK[2], time.monotonic() - t0, bins["nvidia-ctk"]))
    allow = oraclelib.AllowList(ALLOWED)
    per_arg = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="cdi-oracle.") as tmp:
        for fx in FIXTURES:
            root = os.path.join(tmp, fx)
            mkroot(root, fx, options=["--with-fakenvml"])
            for variant in VARIANTS:
                compare_variant(bins, fx, root, variant, tmp, allow, per_arg)
    for p in allow.problems():
        check(False, p)
    print("allowed differences by argument (docs/reference/oracles.md):",
          ", ".join("%s %d" % kv for kv in sorted(per_arg.items())))
    return finish("gpulet's CDI specs match nvidia-ctk %s on %d fixtures x %d variants but for the argued "
                  "differences" % (oraclelib.CTK[2], len(FIXTURES), len(VARIANTS)))


if __name__ == "__main__":
    sys.exit(main())
