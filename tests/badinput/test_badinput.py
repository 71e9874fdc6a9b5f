#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Bad input everywhere (issue 8): each case drives the real gpulet binary with a broken input
and checks that (1) it fails with the documented exit code, (2) the message says what is wrong,
where (file:line:col, path or socket) and what to do, and (3) nothing is half-written: files that
existed are byte-identical, no temp file is left beside them.

usage: test_badinput.py GROUP...   (groups: config cdi doctor nvml fulldisk unreadable instance;
                                    no argument = all)
"""
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("GPULET_SRC") or os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("GPULET_BUILD") or os.path.join(SRC, "build")
GPULET = os.environ.get("GPULET") or os.path.join(BUILD, "gpulet")
FAKE_NVML_LIB = os.environ.get("FAKE_NVML_LIB") or os.path.join(BUILD, "fakenvml", "libnvidia-ml.so.1")
FIXTURES = os.path.join(SRC, "tests", "fixtures")
MKROOT = os.path.join(SRC, "tests", "lib", "mkroot.sh")

for _p in (GPULET, FAKE_NVML_LIB, MKROOT):
    if not os.path.exists(_p):
        raise SystemExit("FAIL: prerequisite missing: %s (build everything first)" % _p)

failures = []
passes = 0


def run(args, env=None, timeout=30, **kw):
    e = dict(os.environ, GRPC_VERBOSITY="error")
    for k in ("CONFIG_FILE", "MIG_STRATEGY", "GPULET_NVML_LIBRARY", "NVIDIA_DRIVER_ROOT"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run([GPULET, *args], capture_output=True, text=True, env=e, timeout=timeout, **kw)


def case(name, cond, detail):
    global passes
    if cond:
        passes += 1
        print("PASS %s" % name)
    else:
        failures.append(name)
        print("FAIL %s: %s" % (name, detail))


def expect(name, r, rc, *patterns):
    """rc (an int or a tuple of allowed codes) and every pattern (regex) found in stderr+stdout."""
    out = r.stderr + r.stdout
    missing = [p for p in patterns if not re.search(p, out)]
    case(name, r.returncode in (rc if isinstance(rc, tuple) else (rc,)) and not missing,
         "rc=%s (want %s), missing %s in:\n%s" % (r.returncode, rc, missing, out[-1500:]))


def snapshot(d):
    """name -> bytes of every file under d (to prove nothing changed)."""
    snap = {}
    for base, _, files in os.walk(d):
        for f in files:
            p = os.path.join(base, f)
            with open(p, "rb") as fh:
                snap[os.path.relpath(p, d)] = fh.read()
    return snap


def mkroot(tmp, fixture):
    root = os.path.join(tmp, "root-" + fixture)
    r = subprocess.run([MKROOT, root, fixture], capture_output=True, text=True, env=dict(os.environ, GPULET_BUILD=BUILD))
    if r.returncode != 0:
        raise SystemExit("FAIL: mkroot %s: %s" % (fixture, r.stderr))
    return root


def nvml_env(fixture):
    return {"FAKE_NVML_FIXTURE": os.path.join(FIXTURES, fixture + ".json")}


# ---- plugin config file ------------------------------------------------------------------------
def group_config(tmp):
    def cfg(name, text):
        p = os.path.join(tmp, name)
        with open(p, "wb") as f:
            f.write(text if isinstance(text, bytes) else text.encode())
        return p

    shared = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: "
    cases = [
        # (name, file content, patterns): what, where (file:line:col), the key
        ("config.truncated", shared, [r"truncated\.yaml:6:\d+", r"replicas must be an integer from 2 to 1024"]),
        ("config.truncated-flow", "version: v1\nflags: {migStrategy: mixed, plugin: [", [r"truncated-flow\.yaml:\d+:\d+"]),
        ("config.wrong-type", "version: v1\nflags:\n  migStrategy: [mixed]\n",
         [r"wrong-type\.yaml:3:\d+", r"flags\.migStrategy", r"expected a single value"]),
        ("config.wrong-bool", "version: v1\nflags:\n  failOnInitError: maybe\n",
         [r"wrong-bool\.yaml:3:\d+", r"failOnInitError"]),
        ("config.huge", shared + "99999999999999999999999\n", [r"huge\.yaml:6:\d+", r"from 2 to 1024"]),
        ("config.bad-enum", "version: v1\nflags:\n  migStrategy: all\n",
         [r"bad-enum\.yaml:3:\d+", r"migStrategy", r"none.*single.*mixed|none\|single\|mixed"]),
        ("config.bad-version", "version: v2\n", [r"bad-version\.yaml:1:\d+", r"version"]),
        ("config.binary", b"\x00\xff\xfe\x01garbage\x00", [r"binary\.yaml"]),
        ("config.many-rules", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n" +
         "".join("    - name: nvidia.com/r%d\n      replicas: 2\n" % i for i in range(40)), [r"many-rules\.yaml"]),
    ]
    for name, text, pats in cases:
        p = cfg(name.split(".", 1)[1] + ".yaml", text)
        expect(name, run(["plugin", "--print-config", "--config-file", p]), 1, *pats)
    big = cfg("big.yaml", "# " + "x" * (2 << 20) + "\n")
    expect("config.too-large", run(["plugin", "--print-config", "--config-file", big]), 1, r"big\.yaml", r"larger than")
    expect("config.directory", run(["plugin", "--print-config", "--config-file", tmp]), 1, re.escape(tmp),
           r"directory")
    expect("config.missing", run(["plugin", "--print-config", "--config-file", tmp + "/nope.yaml"]), 1,
           r"nope\.yaml", r"No such file")
    unk = cfg("unknown.yaml", "version: v1\nflagz: 1\nflags:\n  migStrategyy: mixed\n")
    r = run(["plugin", "--print-config", "--config-file", unk])
    expect("config.unknown-keys-warned", r, 0, r"warning: .*unknown\.yaml:2:1: unknown key .*flagz",
           r"unknown\.yaml:4:\d+: unknown key flags\.migStrategyy")
    expect("config.bad-flag-value", run(["plugin", "--print-config", "--mig-strategy", "bogus"]), (1, 2),
           r"mig-strategy", r"bogus")
    expect("config.bad-env-value", run(["plugin", "--print-config"], env={"MIG_STRATEGY": "bogus"}), (1, 2),
           r"MIG_STRATEGY", r"bogus")


# ---- CDI spec files ----------------------------------------------------------------------------
def group_cdi(tmp):
    good = '{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[{"name":"0","containerEdits":' \
           '{"deviceNodes":[{"path":"/dev/nvidia0"}]}}]}'
    cases = [
        ("cdi.truncated-json", "t.json", good[:60], [r"t\.json:1:\d+", r"fix:"]),
        ("cdi.truncated-yaml", "t.yaml", "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\n",
         [r"t\.yaml:\d+:\d+", r"fix:"]),
        ("cdi.wrong-type", "w.json", good.replace('"name":"0"', '"name":0'), [r"\$\.devices\[0\]\.name", r"fix:"]),
        ("cdi.huge-number", "h.json", good.replace('"/dev/nvidia0"', '"/dev/nvidia0","major":1e400'),
         [r"h\.json", r"fix:"]),
        ("cdi.unknown-key", "u.json", good[:-1] + ',"bogus":1}', [r"\$\.bogus", r"unknown field", r"fix:"]),
        ("cdi.empty", "e.json", "", [r"e\.json", r"fix:"]),
    ]
    for name, fn, text, pats in cases:
        p = os.path.join(tmp, fn)
        with open(p, "w") as f:
            f.write(text)
        before = snapshot(tmp)
        expect(name, run(["cdi", "validate", "--no-host-paths", p]), 1, *pats)
        case(name + ".untouched", snapshot(tmp) == before, "validate changed files in %s" % tmp)


# ---- doctor on a broken containerd config ------------------------------------------------------
def group_doctor(tmp):
    root = mkroot(tmp, "single-t4")
    os.makedirs(root + "/etc/containerd", exist_ok=True)
    with open(root + "/etc/containerd/config.toml", "w") as f:
        f.write('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd\ndefault_runtime_name = "nvidia"\n')
    r = run(["doctor", "--root", root, "--nvml-library", FAKE_NVML_LIB, "--only", "runtime"], env=nvml_env("single-t4"))
    expect("doctor.truncated-toml", r, 1, r"runtime\.config-invalid", re.escape(root) + r"/etc/containerd/config\.toml:2:\d+",
           r"fix: ")
    with open(root + "/etc/containerd/config.toml", "w") as f:
        f.write('version = 99999999999999999999999\n')
    r = run(["doctor", "--root", root, "--nvml-library", FAKE_NVML_LIB, "--only", "runtime"], env=nvml_env("single-t4"))
    expect("doctor.huge-toml-int", r, 1, r"config\.toml:1:\d+", r"fix: ")


# ---- NVML library / fixture --------------------------------------------------------------------
def group_nvml(tmp):
    expect("nvml.missing-library", run(["devices", "--nvml-library", tmp + "/libnvidia-ml.so.1"]), 1,
           re.escape(tmp) + r"/libnvidia-ml\.so\.1")
    notlib = os.path.join(tmp, "notalib.so")
    with open(notlib, "w") as f:
        f.write("not an ELF file\n")
    expect("nvml.not-a-library", run(["devices", "--nvml-library", notlib]), 1, r"notalib\.so")
    bad = os.path.join(tmp, "fixture.json")
    with open(bad, "w") as f:
        f.write('{"driver_version": "550.54.15", "gpus": [')
    expect("nvml.init-fails", run(["devices", "--nvml-library", FAKE_NVML_LIB], env={"FAKE_NVML_FIXTURE": bad}), 1,
           r"NVML|nvml")


# ---- full disk while writing the CDI spec and the feature file ---------------------------------
def mount_tmpfs(d, size="64k"):
    os.makedirs(d, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", d], capture_output=True, text=True)
    return r.returncode == 0, r.stderr.strip()


def fill(d):
    """Fill the filesystem of d; returns the filler path."""
    p = os.path.join(d, ".filler")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 512)
    except OSError:
        pass
    finally:
        os.close(fd)
    return p


def group_fulldisk(tmp):
    t4 = mkroot(tmp, "single-t4")
    a100 = mkroot(tmp, "dgx-a100")
    out = os.path.join(tmp, "cdi-out")
    ok, why = mount_tmpfs(out)
    if not ok:
        # loud: CI runs as root and may mount; a machine that may not must say so, not pass
        case("fulldisk.mount", False, "cannot mount a tmpfs (%s); run as root with CAP_SYS_ADMIN" % why)
        return
    try:
        gen = ["cdi", "generate", "--nvml-library", FAKE_NVML_LIB, "--format", "json", "--output", out + "/"]
        r = run(gen + ["--root", t4], env=nvml_env("single-t4"))
        case("fulldisk.cdi-first-write", r.returncode == 0, r.stderr)
        fill(out)
        before = snapshot(out)
        r = run(gen + ["--root", a100], env=nvml_env("dgx-a100"))  # a bigger spec: does not fit
        expect("fulldisk.cdi-enospc", r, 1, r"cannot write .*nvidia\.com-gpu\.json", r"No space left on device",
               r"previous file.*unchanged")
        case("fulldisk.cdi-old-intact", snapshot(out) == before,
             "files after: %s" % sorted(set(snapshot(out)) ^ set(before)) or "content changed")
    finally:
        subprocess.run(["umount", out])

    feat = t4 + "/etc/kubernetes/node-feature-discovery/features.d"
    ok, why = mount_tmpfs(feat)
    if not ok:
        case("fulldisk.mount-features", False, why)
        return
    try:
        lab = ["labels", "--oneshot", "--root", t4, "--nvml-library", FAKE_NVML_LIB]
        r = run(lab, env=nvml_env("single-t4"))
        case("fulldisk.labels-first-write", r.returncode == 0 and os.path.exists(feat + "/gfd"), r.stderr)
        fill(feat)
        before = snapshot(feat)
        time.sleep(1.1)  # a new timestamp label: the content differs
        r = run(lab, env=nvml_env("single-t4"))
        expect("fulldisk.labels-enospc", r, 1, re.escape(feat) + r"/gfd", r"No space left on device",
               r"previous file.*unchanged")
        case("fulldisk.labels-old-intact", snapshot(feat) == before,
             "files after: %s" % sorted(set(snapshot(feat)) ^ set(before)))
    finally:
        subprocess.run(["umount", feat])


# ---- unreadable dirs and files -----------------------------------------------------------------
def group_unreadable(tmp):
    os.chmod(tmp, 0o755)  # mkdtemp makes it 0700: the runtime user must reach the dirs below
    d = os.path.join(tmp, "specs")
    os.makedirs(d)
    with open(d + "/a.json", "w") as f:
        f.write('{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[{"name":"0","containerEdits":'
                '{"env":["A=1"]}}]}')
    os.chmod(d, 0o700)
    r = run(["cdi", "validate", "--dir", d, "--runtime-user", "65534", "--no-host-paths"])
    expect("unreadable.cdi-dir-for-runtime", r, 1, re.escape(d), r"cannot list", r"fix: .*chmod")
    os.chmod(d, 0o755)
    os.chmod(d + "/a.json", 0o600)
    r = run(["cdi", "validate", "--dir", d, "--runtime-user", "65534", "--no-host-paths"])
    expect("unreadable.cdi-file-for-runtime", r, 1, r"a\.json", r"fix: ")
    # gpulet itself without permission (as nobody): the plugin config
    cfgd = os.path.join(tmp, "cfg")
    os.makedirs(cfgd)
    with open(cfgd + "/config.yaml", "w") as f:
        f.write("version: v1\n")
    os.chmod(cfgd, 0o700)
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", GPULET, "plugin",
                        "--print-config", "--config-file", cfgd + "/config.yaml"], capture_output=True, text=True)
    expect("unreadable.config-as-nobody", r, 1, r"config\.yaml", r"Permission denied")


# ---- a second `gpulet plugin` on the same sockets -----------------------------------------------
def group_instance(tmp):
    root = mkroot(tmp, "single-t4")
    dp = os.path.join(tmp, "dp")
    os.makedirs(dp)
    args = ["plugin", "--nvml-library", FAKE_NVML_LIB, "--root", root, "--device-plugin-path", dp,
            "--kubelet-socket", ""]
    env = dict(os.environ, GRPC_VERBOSITY="error", **nvml_env("single-t4"))
    log_a = open(os.path.join(tmp, "a.log"), "w+")
    a = subprocess.Popen([GPULET, *args], stdout=log_a, stderr=subprocess.STDOUT, env=env)
    sock = os.path.join(dp, "nvidia-gpu.sock")
    try:
        deadline = time.time() + 10
        while not os.path.exists(sock) and time.time() < deadline:
            time.sleep(0.05)
        case("instance.first-serves", os.path.exists(sock), "no socket after 10 s")
        ino = os.stat(sock).st_ino
        try:
            b = subprocess.run([GPULET, *args], capture_output=True, text=True, env=env, timeout=5)
            brc, bout = b.returncode, b.stderr + b.stdout
        except subprocess.TimeoutExpired as e:
            brc, bout = "still running after 5 s", (e.stderr or b"").decode() + (e.stdout or b"").decode()
        case("instance.second-refused", brc == 1 and re.search(re.escape(sock), bout) and
             re.search(r"another|already", bout),
             "second instance: rc=%s (want 1 with a message naming %s and the running instance):\n%s" % (
                 brc, sock, bout[-1200:]))
        time.sleep(0.5)
        try:  # one stat, no exists-then-stat: the socket may go between two calls
            st = os.stat(sock)
        except FileNotFoundError:
            st = None
        case("instance.first-keeps-socket", st is not None and st.st_ino == ino and stat.S_ISSOCK(st.st_mode),
             "the first instance's socket was replaced or removed (inode %s -> %s)" % (ino, st and st.st_ino))
        case("instance.first-alive", a.poll() is None, "first instance exited rc=%s" % a.poll())
    finally:
        a.send_signal(signal.SIGTERM)
        try:
            a.wait(10)
        except subprocess.TimeoutExpired:
            a.kill()
            a.wait()


GROUPS = {"config": group_config, "cdi": group_cdi, "doctor": group_doctor, "nvml": group_nvml,
          "fulldisk": group_fulldisk, "unreadable": group_unreadable, "instance": group_instance}


def main():
    names = sys.argv[1:] or list(GROUPS)
    for n in names:
        tmp = tempfile.mkdtemp(prefix="gpulet-badinput-%s-" % n)
        try:
            GROUPS[n](tmp)
        finally:
            subprocess.run(["umount", "-q", "-R", tmp], capture_output=True)
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed%s" % (passes, len(failures), (": " + ", ".join(failures)) if failures else ""))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
