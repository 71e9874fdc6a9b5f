#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Our TOML reader (through build/toml_dump) against two independent parsers:
Python's tomllib (every file under toml/) and `containerd config dump` (containerd configs,
including `imports` drop-ins merged the way containerd merges them).
Usage: test_toml_peers.py PATH/TO/toml_dump"""
import datetime, glob, json, os, re, shutil, subprocess, sys, tempfile, tomllib

DUMP = sys.argv[1]
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "toml")
fails = []


def norm(v):
    """tomllib gives datetime objects, we give the source text: compare them as ISO strings."""
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return "datetime"
    return v


def norm_ours(ours, ref):
    if isinstance(ref, dict) and isinstance(ours, dict):
        return {k: norm_ours(ours[k], ref.get(k)) for k in ours}
    if isinstance(ref, list) and isinstance(ours, list):
        return [norm_ours(o, ref[i] if i < len(ref) else None) for i, o in enumerate(ours)]
    if ref == "datetime" and isinstance(ours, str):
        return "datetime"
    return ours


def ours(*args):
    p = subprocess.run([DUMP, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check_tomllib(path, expect_valid):
    try:
        with open(path, "rb") as f:
            ref = norm(tomllib.load(f))
        ref_err = None
    except tomllib.TOMLDecodeError as e:
        ref, ref_err = None, str(e)
    rc, out, err = ours(path)
    name = os.path.relpath(path, HERE)
    if expect_valid is not None and (ref_err is None) != expect_valid:
        fails.append(f"{name}: corpus says valid={expect_valid} but tomllib says {ref_err or 'valid'}")
    if ref_err is None:
        if rc != 0:
            fails.append(f"{name}: tomllib accepts, we reject: {err.strip()}")
        elif norm_ours(json.loads(out), ref) != ref:
            fails.append(f"{name}: values differ\n ours={out}\n tomllib={ref}")
    else:
        m = re.search(r"line (\d+)", ref_err)
        mo = re.match(r"[^:]*:(\d+):(\d+): ", err)
        if rc != 1 or not mo:
            fails.append(f"{name}: tomllib rejects ({ref_err}), we rc={rc} err={err.strip()!r}")
        elif m and int(m.group(1)) != int(mo.group(1)):
            fails.append(f"{name}: error line differs: tomllib '{ref_err}', ours '{err.strip()}'")
    return ref_err is None


def containerd_dump(path):
    p = subprocess.run(["containerd", "-c", path, "config", "dump"], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def cri_view(cfg):
    """The keys doctor reads, as containerd 1.6 keeps them (it drops enable_cdi; see real-peers F)."""
    cri = cfg.get("plugins", {}).get("io.containerd.grpc.v1.cri", {})
    ctr = cri.get("containerd", {})
    rts = {n: {"runtime_type": r.get("runtime_type"),
               "BinaryName": r.get("options", {}).get("BinaryName", ""),
               "SystemdCgroup": r.get("options", {}).get("SystemdCgroup", False)}
           for n, r in ctr.get("runtimes", {}).items()}
    return {"default_runtime_name": ctr.get("default_runtime_name"), "runtimes": rts,
            "snapshotter": ctr.get("snapshotter")}


def subset_equal(ours_view, ref_view):
    """Our merged file lacks containerd's built-in defaults: every runtime we have must be in the
    dump with the same values, and the default runtime must agree when we set one."""
    for n, r in ours_view["runtimes"].items():
        d = ref_view["runtimes"].get(n)
        if d is None:
            return f"runtime {n} missing from containerd's dump"
        for k, v in r.items():
            if v is not None and d.get(k) != v and not (k == "BinaryName" and v == ""):
                return f"runtime {n}.{k}: ours {v!r}, containerd {d.get(k)!r}"
    if set(ref_view["runtimes"]) - set(ours_view["runtimes"]) - {"runc"}:
        return f"containerd has runtimes we lack: {set(ref_view['runtimes']) - set(ours_view['runtimes'])}"
    if ours_view["default_runtime_name"] not in (None, ref_view["default_runtime_name"]):
        return f"default_runtime_name ours {ours_view['default_runtime_name']!r}, containerd {ref_view['default_runtime_name']!r}"
    return None


def check_containerd(path):
    name = os.path.relpath(path, HERE)
    # tomllib keeps integers beyond 64 bits (Python ints); TOML 1.0 says a parser must reject
    # them, and containerd's go-toml does: containerd alone judges those files.
    valid = check_tomllib(path, None) if "int-overflow" not in name else True
    with open(path, "rb") as f:
        version = tomllib.load(f).get("version", 1) if valid else 2
    if version > 2:
        return  # containerd 1.6 on this machine knows versions 1 and 2 only
    rc, out, err = containerd_dump(path)
    orc, oout, oerr = ours("--containerd", "/", os.path.abspath(path))
    if (rc == 0) != (orc == 0):
        fails.append(f"{name}: containerd rc={rc} ({err.strip()[:200]}), ours rc={orc} ({oerr.strip()})")
        return
    if rc == 0:
        why = subset_equal(cri_view(json.loads(oout)), cri_view(tomllib.loads(out)))
        if why:
            fails.append(f"{name}: {why}")


# --- imports: the layout nvidia-ctk writes (drop-in repeating the CRI section) and a per-plugin replace
MAIN = """version = 2
imports = ["{d}/conf.d/*.toml", "extra.toml"]
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
  snapshotter = "native"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = true
"""
DROPIN = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "nvidia"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
      BinaryName = "/usr/bin/nvidia-container-runtime"
      SystemdCgroup = true
"""
EXTRA = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]
  runtime_type = "io.containerd.kata.v2"
"""


def check_imports():
    d = tempfile.mkdtemp(prefix="toml-imports-")
    try:
        os.makedirs(f"{d}/conf.d")
        open(f"{d}/config.toml", "w").write(MAIN.format(d=d))
        open(f"{d}/conf.d/99-nvidia.toml", "w").write(DROPIN)
        open(f"{d}/extra.toml", "w").write(EXTRA)
        rc, out, err = containerd_dump(f"{d}/config.toml")
        orc, oout, oerr = ours("--containerd", "/", f"{d}/config.toml")
        if rc != 0 or orc != 0:
            fails.append(f"imports: containerd rc={rc} {err[:200]} ours rc={orc} {oerr}")
            return
        ref, mine = cri_view(tomllib.loads(out)), cri_view(json.loads(oout))
        # containerd < 2.1 replaces the whole plugin table per import: the last file wins outright
        if set(mine["runtimes"]) != set(ref["runtimes"]) - ({"runc"} - set(mine["runtimes"])):
            fails.append(f"imports: runtimes ours {sorted(mine['runtimes'])} containerd {sorted(ref['runtimes'])}")
        why = subset_equal(mine, ref)
        if why:
            fails.append(f"imports: {why}")
        if mine["snapshotter"] != (ref["snapshotter"] if ref["snapshotter"] != "overlayfs" else None):
            fails.append(f"imports: snapshotter ours {mine['snapshotter']!r} containerd {ref['snapshotter']!r}")
    finally:
        shutil.rmtree(d)


for f in sorted(glob.glob(f"{HERE}/valid/*.toml")):
    check_tomllib(f, True)
for f in sorted(glob.glob(f"{HERE}/invalid/*.toml")):
    check_tomllib(f, False)
with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as t:
    t.write(subprocess.run(["containerd", "config", "default"], capture_output=True, text=True, check=True).stdout)
for f in sorted(glob.glob(f"{HERE}/containerd/*.toml")) + [t.name]:
    check_containerd(f)
os.unlink(t.name)
check_imports()

n = len(glob.glob(f"{HERE}/*/*.toml")) + 2
if fails:
    print("\n".join(fails))
    print(f"FAIL: {len(fails)} disagreements")
    sys.exit(1)
print(f"OK: {n} files agree with tomllib and containerd config dump")
