#!/usr/bin/python3
"""Black-box tests of `gpulet cdi generate` on every fixture root (tests/lib/mkroot.sh).

Each spec is checked three ways: against the fixture and the root's files directly (device names,
device nodes, MIG caps minors from the root's mig-minors table, every *.so.<version> library and its
SONAME link, firmware, tools, sockets), byte for byte against a reviewed golden file, and read back
by an independent YAML reader (PyYAML) from the YAML output. Set GPULET_UPDATE_GOLDEN=1 to rewrite
the goldens after a deliberate change.
"""
import glob
import json
import os
import sys
import tempfile

import yaml

from test_cdi_testlib import CONFIG_FILES, FIXTURES, SRC, check, finish, generate, gpulet, load_fixture, mkroot

GOLDEN = os.path.join(SRC, "tests/golden/cdi")
UPDATE = os.environ.get("GPULET_UPDATE_GOLDEN") == "1"
LIBDIR = "usr/lib/x86_64-linux-gnu"
# variant name -> (extra args, kind, name strategies)
VARIANTS = {
    "nvidia": ([], "nvidia.com/gpu", ("index", "uuid")),
    "plugin-uuid": (["--vendor", "k8s.device-plugin.nvidia.com", "--device-name-strategy", "uuid"],
                    "k8s.device-plugin.nvidia.com/gpu", ("uuid",)),
    "plugin-index": (["--vendor", "k8s.device-plugin.nvidia.com", "--device-name-strategy", "index"],
                     "k8s.device-plugin.nvidia.com/gpu", ("index",)),
}
def mig_minors(root):
    table = {}
    with open(os.path.join(root, "proc/driver/nvidia-caps/mig-minors")) as f:
        for line in f:
            key, _, minor = line.strip().rpartition(" ")
            table[key] = int(minor)
    return table


def expected_devices(fx, root, strategies):
    """[(name, [node paths])] in generation order, from the fixture and the root alone."""
    minors = mig_minors(root)
    out, union = [], []
    for i, g in enumerate(fx["gpus"]):
        if g.get("lost"):
            continue  # NVML answers GPU_IS_LOST: no UUID or minor to name it by, no device
        parent = "/dev/nvidia%d" % g["minor"]
        if parent not in union:
            union.append(parent)
        names = {"index": str(i), "uuid": g["uuid"]}
        if g.get("mig_mode") != 1:
            out += [(names[s], [parent]) for s in strategies]
        k = 0
        for gi in g.get("mig") or []:
            for ci in gi.get("cis") or []:
                caps = ["/dev/nvidia-caps/nvidia-cap%d" % minors["gpu%d/gi%d/access" % (g["minor"], gi["gi"])],
                        "/dev/nvidia-caps/nvidia-cap%d" % minors["gpu%d/gi%d/ci%d/access" % (g["minor"], gi["gi"],
                                                                                              ci["ci"])]]
                union += [c for c in caps if c not in union]
                names = {"index": "%d:%d" % (i, k), "uuid": ci["uuid"]}
                out += [(names[s], [parent] + caps) for s in strategies]
                k += 1
    return out + [("all", union)]


def expected_mounts(root, ver):
    """Container paths the driver root holds for a container, read from the files themselves: every
    library file of the driver's version and every link to one (SONAME and development links, which
    ldconfig also caches; nvidia-ctk recreates the latter with a hook, we mount them)."""
    want = set()
    for d in (LIBDIR, LIBDIR + "/vdpau"):
        for name in os.listdir(os.path.join(root, d)):
            p = os.path.join(root, d, name)
            real = os.path.basename(os.path.realpath(p))
            if not real.endswith(".so." + ver):
                continue
            want.add("/%s/%s" % (d, name))
    for pattern in ("gsp*.bin", "ucodes*.bin"):  # nvidia-ctk 1.20 mounts both (pkg/nvcdi/driver-nvml.go)
        for p in glob.glob(os.path.join(root, "lib/firmware/nvidia", ver, pattern)):
            want.add("/" + os.path.relpath(p, root))
    for b in ("nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
              "nvidia-cuda-mps-server"):
        if os.access(os.path.join(root, "usr/bin", b), os.X_OK):
            want.add("/usr/bin/" + b)
    for s in ("run/nvidia-persistenced/socket", "run/nvidia-fabricmanager/socket"):
        if os.path.exists(os.path.join(root, s)):
            want.add("/" + s)
    want |= {c for h, c in CONFIG_FILES.items() if os.path.exists(os.path.join(root, h.lstrip("/")))}
    return want


def cross_check(where, fx, root, spec, kind, strategies):
    check(spec["kind"] == kind, f"{where}: kind {spec['kind']}")
    want = expected_devices(fx, root, strategies)
    got = [(d["name"], [n["path"] for n in d["containerEdits"]["deviceNodes"]]) for d in spec["devices"]]
    check(got == want, f"{where}: devices\n  got  {got}\n  want {want}")
    digit = any(d["name"][0].isdigit() for d in spec["devices"])
    check(spec["cdiVersion"] == ("0.5.0" if digit else "0.3.0"), f"{where}: cdiVersion {spec['cdiVersion']}")
    edits = spec["containerEdits"]
    ctl = sorted("/dev/" + n for n in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
                 if os.path.exists(os.path.join(root, "dev", n)))
    check(sorted(n["path"] for n in edits.get("deviceNodes", [])) == ctl, f"{where}: control nodes")
    mounts = {m["containerPath"]: m for m in edits.get("mounts", [])}
    want_m = expected_mounts(root, fx["driver_version"])
    want_m.add("/var/run/nvidia-container-devices/void")
    check(set(mounts) == want_m, f"{where}: mounts differ: extra {sorted(set(mounts) - want_m)} "
                                 f"missing {sorted(want_m - set(mounts))}")
    # nvidia-ctk's "void" device list for its legacy hook's volume-mounts mode (pkg/nvcdi/wrapper.go)
    void = mounts.pop("/var/run/nvidia-container-devices/void", None)
    check(void == {"hostPath": "/dev/null", "containerPath": "/var/run/nvidia-container-devices/void",
                   "options": ["ro", "nosuid", "nodev", "bind"]}, f"{where}: the void mount {void}")
    for p, m in mounts.items():
        check(m["hostPath"] == p, f"{where}: {p} host path {m['hostPath']} (driver root is /)")
        opts = m.get("options", [])
        check("rbind" in opts and "nosuid" in opts and ("ro" in opts) != p.endswith("/socket"),
              f"{where}: {p} options {opts}")
    env = edits["env"]
    check("NVIDIA_VISIBLE_DEVICES=void" in env, f"{where}: NVIDIA_VISIBLE_DEVICES=void")
    check("NVIDIA_CTK_LIBCUDA_DIR=/" + LIBDIR in env, f"{where}: NVIDIA_CTK_LIBCUDA_DIR")
    check("GPULET_CDI_SPEC=" + kind in env, f"{where}: owner marker")


def golden(name, text):
    path = os.path.join(GOLDEN, name)
    if UPDATE:
        with open(path, "w") as f:
            f.write(text)
        return
    try:
        with open(path) as f:
            check(f.read() == text, f"golden {name} differs (GPULET_UPDATE_GOLDEN=1 to accept)")
    except FileNotFoundError:
        check(False, f"golden {name} missing (GPULET_UPDATE_GOLDEN=1 to create)")


def main():
    check(len(FIXTURES) >= 6, f"fixtures found: {FIXTURES}")
    with tempfile.TemporaryDirectory(prefix="gpulet-cdi-golden.") as tmp:
        for fixture in FIXTURES:
            fx = load_fixture(fixture)
            root = os.path.join(tmp, fixture)
            mkroot(root, fixture)
            for variant, (args, kind, strategies) in VARIANTS.items():
                where = f"{fixture}/{variant}"
                r = generate(fixture, root, args + ["--format", "json"])
                if not fx.get("gpus"):
                    check(r.returncode == 1 and "no GPUs" in r.stderr, f"{where}: no-GPU node: rc {r.returncode} "
                                                                       f"{r.stderr.strip()}")
                    continue
                check(r.returncode == 0, f"{where}: rc {r.returncode}: {r.stderr.strip()}")
                if r.returncode != 0:
                    continue
                spec = json.loads(r.stdout)
                cross_check(where, fx, root, spec, kind, strategies)
                golden(f"{fixture}-{variant}.json", r.stdout)
                # the same spec in YAML, read by PyYAML
                y = generate(fixture, root, args + ["--format", "yaml"])
                check(y.returncode == 0 and y.stdout.startswith("---\n"), f"{where}: yaml output")
                check(yaml.safe_load(y.stdout) == spec, f"{where}: YAML reads back different from JSON")
                # our own validator agrees with a runtime's view of this root
                spec_file = os.path.join(tmp, f"{fixture}-{variant}.json")
                with open(spec_file, "w") as f:
                    f.write(r.stdout)
                v = gpulet(["cdi", "validate", "--root", root, "--runtime", "podman-4.3", spec_file])
                check(v.returncode == 0 and " 0 errors, 0 warnings" in v.stdout,
                      f"{where}: validate: {v.stdout.strip()}")
    return finish(f"{len(FIXTURES)} fixtures x {len(VARIANTS)} variants")


if __name__ == "__main__":
    sys.exit(main())
