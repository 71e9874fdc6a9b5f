#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Valgrind memcheck over the unit tests and the key black-box commands (issue 8 §5).

  run.py units      every C test executable CTest knows in $GPULET_BUILD (benchmarks excepted),
                    with its CTest environment, plus the fuzz replays over their corpora
  run.py blackbox   gpulet devices / cdi generate / cdi validate / cdi list / doctor / labels
                    --oneshot / versions / plugin --print-config on fake nodes, and a plugin session
                    (register, Allocate, kubelet restart, SIGHUP, SIGTERM) with the kubelet stand-in
  run.py all        both (default)

Each run: valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99.
A memcheck error or a definite/indirect leak fails (exit 99 is told apart from the program's own
failure); the valgrind log of each failure is printed. Needs valgrind (in .ci/packages.txt).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("GPULET_SRC") or os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("GPULET_BUILD") or os.path.join(SRC, "build")
GPULET = os.path.join(BUILD, "gpulet")
FAKE_NVML_LIB = os.path.join(BUILD, "fakenvml", "libnvidia-ml.so.1")
FIXTURES = os.path.join(SRC, "tests", "fixtures")
VG_RC = 99
SUPP = os.path.join(HERE, "gpulet.supp")


def valgrind_cmd(log):
    vg = shutil.which("valgrind")
    if not vg:
        raise SystemExit("FAIL: valgrind not installed (apt-get install valgrind; it is in .ci/packages.txt)")
    cmd = [vg, "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
           "--show-leak-kinds=definite,indirect", "--error-exitcode=%d" % VG_RC, "--num-callers=30",
           "--log-file=" + log]
    if os.path.exists(SUPP):
        cmd.append("--suppressions=" + SUPP)
    return cmd


results = []


def record(name, rc, log, secs, ok_rcs=(0,), stderr=""):
    """rc VG_RC: memcheck found something; any other rc not in ok_rcs: the program itself failed."""
    text = open(log).read() if os.path.exists(log) else ""
    leak = next((ln.strip() for ln in text.splitlines() if "definitely lost:" in ln), "")
    status = "PASS" if rc in ok_rcs else ("MEMCHECK" if rc == VG_RC else "FAIL")
    results.append((name, status, rc, secs))
    print("%-8s %-44s rc=%-3s %6.1fs %s" % (status, name, rc, secs, leak.split("==", 2)[-1].strip() if leak else ""))
    if status != "PASS":
        print("---- output (tail) ----\n%s" % stderr[-1500:])
        print("---- valgrind log %s (tail) ----\n%s" % (log, "\n".join(text.splitlines()[-80:])))
    sys.stdout.flush()


def run_one(name, argv, env=None, cwd=None, ok_rcs=(0,), timeout=900, logdir=None):
    only = os.environ.get("VG_ONLY")
    if only and only not in name:
        return
    log = os.path.join(logdir, name.replace("/", "_") + ".vg.log")
    t0 = time.time()
    try:
        r = subprocess.run(valgrind_cmd(log) + argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
        rc, err = r.returncode, r.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired:
        rc, err = "timeout", ""
    record(name, rc, log, time.time() - t0, ok_rcs, err)


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


# Unit tests valgrind cannot run, each with why (the sanitizer stage runs them).
NOT_UNDER_VALGRIND = {
    # Debian 12's valgrind 3.19 fails openat2, open_tree and move_mount (syscalls 437, 428, 429)
    # with ENOSYS, so the hook's isolated ldconfig, which needs them, cannot start under it.
    "cdihook_guards": "valgrind 3.19 lacks openat2/open_tree/move_mount",
    # The jail's own checks: valgrind cannot run a seccomp filter's child (it dies on the denied
    # syscalls it emulates itself) nor decode the i386 int 0x80 the other-architecture case makes.
    "cdihook_jail": "valgrind cannot run the seccomp and i386-syscall cases",
}


def units(logdir):
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=BUILD, capture_output=True, text=True, check=True)
    for t in json.loads(out.stdout)["tests"]:
        cmd = t.get("command") or []
        if not cmd or not is_elf(cmd[0]) or not cmd[0].startswith(os.path.realpath(BUILD)) and not cmd[0].startswith(BUILD):
            continue
        if "bench" in t["name"] or "python" in os.path.basename(cmd[0]) or t["name"] in NOT_UNDER_VALGRIND:
            continue
        env = dict(os.environ)
        cwd = None
        for p in t.get("properties", []):
            if p["name"] == "ENVIRONMENT":
                env.update(kv.split("=", 1) for kv in p["value"])
            if p["name"] == "WORKING_DIRECTORY":
                cwd = p["value"]
        run_one("unit/" + t["name"], cmd, env=env, cwd=cwd, logdir=logdir)
    fuzz = os.path.join(BUILD, "fuzz")
    for b in sorted(os.listdir(fuzz)) if os.path.isdir(fuzz) else []:
        if b.startswith("fuzz_replay_"):
            t = b[len("fuzz_replay_"):]
            run_one("fuzz/" + t, [os.path.join(fuzz, b), os.path.join(SRC, "tests", "fuzz", "corpus", t)],
                    logdir=logdir)


def mkroot(tmp, fixture):
    root = os.path.join(tmp, "root-" + fixture)
    subprocess.run([os.path.join(SRC, "tests", "lib", "mkroot.sh"), root, fixture], check=True,
                   capture_output=True, env=dict(os.environ, GPULET_BUILD=BUILD))
    return root


def blackbox(logdir, tmp):
    a100 = mkroot(tmp, "dgx-a100")
    env = dict(os.environ, FAKE_NVML_FIXTURE=os.path.join(FIXTURES, "dgx-a100.json"), GRPC_VERBOSITY="error")
    nv = ["--nvml-library", FAKE_NVML_LIB]
    for fx in ("dgx-a100", "single-t4", "mixed", "no-gpu"):
        run_one("gpulet/devices-" + fx, [GPULET, "devices", "--json", *nv],
                env=dict(env, FAKE_NVML_FIXTURE=os.path.join(FIXTURES, fx + ".json")), logdir=logdir)
    spec = os.path.join(a100, "var/run/cdi")  # inside the node root: validate checks host paths there
    run_one("gpulet/cdi-generate", [GPULET, "cdi", "generate", "--root", a100, *nv, "--output", spec + "/",
                                    "--format", "yaml"], env=env, logdir=logdir)
    run_one("gpulet/cdi-validate", [GPULET, "cdi", "validate", "--root", a100, "--dir", "/var/run/cdi", "--json"],
            env=env, ok_rcs=(0, 1), logdir=logdir)
    run_one("gpulet/cdi-validate-corpus", [GPULET, "cdi", "validate", "--no-host-paths"] +
            sorted(os.path.join(SRC, "tests/fuzz/corpus/cdi", f) for f in os.listdir(os.path.join(SRC, "tests/fuzz/corpus/cdi"))),
            env=env, ok_rcs=(0, 1), logdir=logdir)
    run_one("gpulet/cdi-list", [GPULET, "cdi", "list", "--dir", spec, "--json"], env=env, logdir=logdir)
    run_one("gpulet/doctor", [GPULET, "doctor", "--root", a100, *nv, "--json"], env=env, ok_rcs=(0, 1),
            logdir=logdir)
    os.makedirs(a100 + "/etc/kubernetes/node-feature-discovery/features.d", exist_ok=True)  # NFD makes it
    run_one("gpulet/labels-oneshot", [GPULET, "labels", "--oneshot", "--root", a100, *nv, "--mig-strategy", "mixed"],
            env=env, logdir=logdir)
    run_one("gpulet/versions", [GPULET, "versions", "--root", a100, *nv], env=env, ok_rcs=(0, 1), logdir=logdir)
    cfg = os.path.join(tmp, "config.yaml")
    with open(cfg, "w") as f:
        f.write("version: v1\nflagz: 1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                "      replicas: 4\n")
    run_one("gpulet/plugin-print-config", [GPULET, "plugin", "--print-config", "--config-file", cfg], env=env,
            logdir=logdir)
    plugin_session(logdir, cfg)


def plugin_session(logdir, cfg):
    """The daemon under valgrind: register, Allocate, kubelet restart, SIGHUP, SIGTERM (exit 0)."""
    sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
    import plugin_lib

    log = os.path.join(logdir, "gpulet_plugin-session.vg.log")
    wrapper = os.path.join(logdir, "gpulet-under-valgrind")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec %s %s \"$@\"\n" % (" ".join(valgrind_cmd(log)), GPULET))
    os.chmod(wrapper, 0o755)
    plugin_lib.GPULET = wrapper
    h = plugin_lib.Harness("dgx-a100")
    t0 = time.time()
    rc = "setup"
    try:
        h.start_standin()
        h.start_plugin("--config-file", cfg, "--mig-strategy", "mixed", "--pass-device-specs", wait_resources=())
        h.wait_list("nvidia.com/gpu", timeout=120)
        h.wait_list("nvidia.com/mig-1g.5gb", timeout=60)
        fx = h.fixture_data()
        for _ in range(3):
            h.allocate("nvidia.com/gpu", [fx["gpus"][0]["uuid"] + "::1"])
        h.kill_standin()
        h.start_standin()
        h.wait_list("nvidia.com/gpu", timeout=60)
        h.plugin.send_signal(signal.SIGHUP)
        h.wait_log("Restarting device plugins", timeout=60)
        time.sleep(2)
        rc = h.stop_plugin(timeout=120)
    except AssertionError as e:
        print("plugin session: %s" % e)
    finally:
        plog = open(h.log_path).read() if os.path.exists(h.log_path) else ""
        h.close()
    record("gpulet/plugin-session", rc, log, time.time() - t0, stderr=plog)


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    logdir = tempfile.mkdtemp(prefix="gpulet-valgrind-")
    tmp = tempfile.mkdtemp(prefix="gpulet-valgrind-root-")
    try:
        if what in ("units", "all"):
            units(logdir)
        if what in ("blackbox", "all"):
            blackbox(logdir, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    bad = [r for r in results if r[1] != "PASS"]
    print("valgrind: %d runs, %d clean, %d memcheck, %d failed (logs in %s)" % (
        len(results), len(results) - len(bad), sum(r[1] == "MEMCHECK" for r in bad),
        sum(r[1] == "FAIL" for r in bad), logdir))
    if not bad:
        shutil.rmtree(logdir, ignore_errors=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
