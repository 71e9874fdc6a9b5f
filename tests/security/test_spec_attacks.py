#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What a generated CDI spec hands a container, attacked by the image and by a local user of the node,
through a real runtime (GPULET_SEC_RUNTIME: runc or crun) with a host canary that must stay unchanged
(docs/reference/cdi-hook.md §5, docs/reference/cdi.md §7.5).

  fallback  gpulet without the static gpulet-cdi-hook beside it: `cdi generate` says its hooks run the
            dynamically linked gpulet; an image that sets LD_PRELOAD and LD_LIBRARY_PATH, with the hook
            entries' env dropped, gets the hook's refusal instead of a hook action run by a loader it
            steered where the runtime hands such a hook the container's environment (runc 1.1; the
            test asks the runtime), and starts where it does not (crun 1.8); with the env the spec has,
            the same image starts
  mps       /tmp/nvidia-mps a local user made or can take over (owned by uid 1000; root's but 0777,
            not sticky; a symlink to a dir): `cdi generate` leaves it out with a warning, and a
            container that writes into its /tmp/nvidia-mps leaves the host's untouched; root's 0755
            and 1777 (sticky) ones are mounted read-write
  memlimits the full GPU's apply-cuda-memory-limits hook, run by the runtime as the createRuntime hook the
            spec names: a container without NVIDIA_GPU_MEMORY_LIMIT/_REQUEST starts; one that asks for a
            limit gets it through NVML (the fake's log: the GPU, the container's cgroup v2 dir, the
            bytes) on a cgroup v2 host and the hook's refusal on a cgroup v1 one, never a start without
            the limit; a spec naming an action the hook does not know fails the start
            (docs/reference/cdi-hook.md §2.5)

usage: test_spec_attacks.py GROUP...  (no argument = all). Exit 77 (CTest skip) only without root, the
runtime or busybox; everything else that goes wrong fails.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seclib  # noqa: E402
from seclib import case, hooks_with  # noqa: E402

FALLBACK = "the static hook gpulet-cdi-hook (not installed beside %s)"


# ---- the dynamic fallback ---------------------------------------------------------------------------
def runtime_leaks_env(s, env):
    """Whether the runtime hands a createContainer hook without env the container's environment: a
    hook (the host's /bin/sh) that writes its own environment out, in a container with env."""
    d = s.casedir("fallback.runtime-env")
    out = os.path.join(d, "hook-env")
    hook = {"path": "/bin/sh", "args": ["sh", "-c", "env > '%s'" % out]}
    rootfs = seclib.busybox_rootfs(os.path.join(d, "bundle/rootfs"))
    rc, _out, err, _t = s.rt.run(seclib.write_bundle(os.path.join(d, "bundle"), rootfs, [hook], env=env))
    if rc != 0 or not os.path.exists(out):
        raise RuntimeError("%s did not run the env hook: rc %s %s" % (s.rt.name, rc, err[-300:]))
    with open(out) as f:
        return any(line.startswith("LD_PRELOAD=") for line in f)


def group_fallback(s):
    # gpulet installed alone: a copy of the binary in a dir without gpulet-cdi-hook
    alone_dir = os.path.join(s.tmp, "alone")
    os.makedirs(alone_dir)
    alone = shutil.copy2(seclib.GPULET, os.path.join(alone_dir, "gpulet"))
    edits, err = seclib.generate(s.tmp, gpulet=alone)
    print("  [fallback.generate] stderr: %s" % err.strip()[-600:])
    paths = sorted({h["path"] for h in edits["hooks"]})
    case("fallback.generate.hooks-run-the-dynamic-gpulet", paths == [alone] and
         all(h["args"][:2] == ["gpulet", "cdi-hook"] for h in edits["hooks"]), "hook paths %s" % paths)
    case("fallback.generate.warns", FALLBACK % alone in err and "--nvidia-cdi-hook-path" in err,
         "cdi generate fell back to %s without the warning: %r" % (alone, err[-600:]))
    _, err = seclib.generate(s.tmp)
    case("fallback.generate-with-static-hook.no-warning", "the static hook" not in err, err[-600:])

    # the image's loader variables; nothing of them loads (a library that did would run before any
    # check of gpulet's: docs/reference/cdi-hook.md §5), so what is tested is that no hook action runs
    env = ["PATH=/bin", "LD_PRELOAD=/proc/self/cwd/absent/evil.so", "LD_LIBRARY_PATH=/proc/self/cwd/nolib"]
    leaks = runtime_leaks_env(s, env)
    print("  [fallback] %s hands a hook without env the container's environment: %s" % (s.rt.name, leaks))
    r = s.container("fallback.container-env", edits=edits, hooks=hooks_with(edits, drop_env=True), env=env)
    r["canary"].check(r["name"])
    if leaks:  # runc 1.1: the hook refuses, and does nothing
        s.refused(r, r"LD_(PRELOAD|LIBRARY_PATH) is set in the hook's environment")
        case(r["name"] + ".no-hook-action", not os.path.exists(os.path.join(r["rootfs"], "etc/ld.so.cache")),
             "a hook action ran: the rootfs got an ld.so.cache")
    else:  # crun 1.8: the variables never reach the hook, which runs as with the spec's env
        s.started(r)
        s.cache_has_spec_libs(r)

    r = s.container("fallback.spec-env", edits=edits, env=env)
    r["canary"].check(r["name"])
    s.started(r)
    s.cache_has_spec_libs(r)


# ---- /tmp/nvidia-mps ------------------------------------------------------------------------------
def mps_cases(node):
    """(name, make the host's dir, the dir a mount would write into, the warning's reason or None)."""
    mps = os.path.join(node, "tmp/nvidia-mps")
    real = os.path.join(node, "mps-real")

    def plain(uid, mode):
        def make():
            os.mkdir(mps)
            os.chown(mps, uid, uid)
            os.chmod(mps, mode)
        return make

    def link():
        os.mkdir(real, 0o755)
        os.symlink("../mps-real", mps)

    return [("user-owned", plain(1000, 0o777), mps, "is owned by uid 1000"),
            ("world-writable", plain(0, 0o777), mps, "has mode 0777"),
            ("symlink", link, real, "is a symlink"),
            ("root-0755", plain(0, 0o755), mps, None),
            ("root-1777", plain(0, 0o1777), mps, None)]


def group_mps(s):
    node = os.path.join(s.tmp, "node")
    seclib.node_spec(s.tmp)  # makes the node
    os.makedirs(os.path.join(node, "tmp"), exist_ok=True)
    os.chmod(os.path.join(node, "tmp"), 0o1777)
    script = "mkdir -p /tmp/nvidia-mps && echo x > /tmp/nvidia-mps/planted && echo STARTED"
    for name, make, target, why in mps_cases(node):
        for p in (os.path.join(node, "tmp/nvidia-mps"), os.path.join(node, "mps-real")):
            if os.path.islink(p) or os.path.isfile(p):
                os.unlink(p)
            elif os.path.isdir(p):
                shutil.rmtree(p)
        make()
        edits, err = seclib.generate(s.tmp)
        mounted = [m for m in edits["mounts"] if m["containerPath"] == "/tmp/nvidia-mps"]
        before = seclib.fingerprint(target)
        r = s.container("mps." + name, edits=edits, script=script)
        after = seclib.fingerprint(target)
        s.started(r)
        r["canary"].check(r["name"])
        if why is None:
            case(r["name"] + ".mounted", mounted and "nvidia-mps" not in err, "mounts %s; stderr %r" % (mounted, err))
            case(r["name"] + ".container-writes-the-host-dir", os.path.exists(os.path.join(target, "planted")),
                 "the container's write did not reach %s" % target)
            continue
        case(r["name"] + ".not-mounted", not mounted, "the spec mounts %s into every container: %s" % (target, mounted))
        case(r["name"] + ".warned", re.search(r"tmp/nvidia-mps \(MPS pipe dir\): not mounted.*" + re.escape(why), err),
             "cdi generate's stderr: %r" % err[-800:])
        case(r["name"] + ".host-dir-unchanged", before == after,
             "the container wrote into the host's %s: %s" % (target, seclib.diff(before, after)))


# ---- apply-cuda-memory-limits -------------------------------------------------------------------------
def cgroup2_host():
    return os.statvfs("/sys/fs/cgroup") and subprocess.run(["stat", "-fc", "%T", "/sys/fs/cgroup"], capture_output=True,
                                                           text=True).stdout.strip() == "cgroup2fs"


def memlimits_spec(s):
    """A node with the fake NVML installed (the hook's hand-over loads it from --driver-root with an empty
    environment) logging each limit it is given, and the full spec `cdi generate` writes for it."""
    node = os.path.join(s.tmp, "memnode")
    log = os.path.join(s.tmp, "memory-limits.log")
    seclib.sh(["sh", os.path.join(seclib.SRC, "tests/lib/mkroot.sh"), node, seclib.FIXTURE, "--with-fakenvml"],
              env=dict(os.environ, GPULET_BUILD=seclib.BUILD))
    fx = os.path.join(node, seclib.LIBDIR.lstrip("/"), "fakenvml-fixture.json")
    with open(fx) as f:
        doc = json.load(f)
    doc["memory_limits_log"] = log
    with open(fx, "w") as f:
        json.dump(doc, f)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPULET_", "NVIDIA_"))}
    p = subprocess.run([seclib.GPULET, "cdi", "generate", "--nvml-library", seclib.FAKE_NVML_LIB, "--driver-root",
                        node, "--dev-root", node, "--format", "json", "--device-id", "0"],
                       capture_output=True, text=True, env=dict(env, FAKE_NVML_FIXTURE=fx))
    if p.returncode != 0:
        raise RuntimeError("cdi generate: rc %d: %s" % (p.returncode, p.stderr))
    return json.loads(p.stdout), log


def group_memlimits(s):
    spec, log = memlimits_spec(s)
    dev = next(d for d in spec["devices"] if d["name"] == "0")["containerEdits"]
    mem = [h for h in dev.get("hooks", []) if "apply-cuda-memory-limits" in h["args"]]
    case("memlimits.in-spec", len(mem) == 1 and mem[0]["hookName"] == "createRuntime", "device 0's hooks: %r" % dev)
    if not mem:
        return
    uuid = mem[0]["args"][-1]
    edits = dict(spec["containerEdits"], hooks=spec["containerEdits"]["hooks"] +
                 [h for h in dev.get("hooks", []) if h not in mem])

    def runtime_hook(c, _canary):
        c["hooks"]["createRuntime"] = [{k: mem[0][k] for k in ("path", "args", "env")}]

    base_env = ["PATH=/bin"]
    r = s.container("memlimits.not-asked", edits=edits, tweak=runtime_hook, env=base_env)
    s.started(r)
    case("memlimits.not-asked.no-nvml-call", not os.path.exists(log), "NVML was called: %s" % log)
    r = s.container("memlimits.asked", edits=edits, tweak=runtime_hook,
                    env=base_env + ["NVIDIA_GPU_MEMORY_LIMIT=4096", "NVIDIA_GPU_MEMORY_REQUEST=1024"])
    if cgroup2_host():
        s.started(r)
        with open(log) if os.path.exists(log) else open(os.devnull) as f:
            lines = f.read().split()
        case("memlimits.asked.applied", len(lines) == 4 and lines[0] == uuid and lines[1].startswith("/sys/fs/cgroup/")
             and lines[2:] == [str(1024 << 20), str(4096 << 20)], "the fake NVML's log: %r" % lines)
    else:
        s.refused(r, r"apply-cuda-memory-limits: .*not the cgroup v2 \(unified\) hierarchy")
        case("memlimits.asked.no-nvml-call", not os.path.exists(log), "NVML was called on a cgroup v1 host")
    if not cgroup2_host() and seclib.hybrid_cgroups():
        # a cgroup v1 host with the unified hierarchy beside it: the same container, the runtime (and so
        # its hooks) in a mount namespace of its own where /sys/fs/cgroup is that cgroup2 mount
        saved = s.rt.cmd
        s.rt.cmd = (["unshare", "--mount", "--propagation", "private", "sh", "-c",
                     'mount --bind /sys/fs/cgroup/unified /sys/fs/cgroup && exec "$@"', "sh", seclib.RUNTIME, "--root",
                     s.rt.state] + (["--cgroup-manager=disabled"] if seclib.RUNTIME == "crun" else []))
        try:
            r = s.container("memlimits.asked-cgroup2", edits=edits, tweak=runtime_hook,
                            env=base_env + ["NVIDIA_GPU_MEMORY_LIMIT=4096", "NVIDIA_GPU_MEMORY_REQUEST=1024"])
        finally:
            s.rt.cmd = saved
        s.started(r)
        with open(log) if os.path.exists(log) else open(os.devnull) as f:
            lines = f.read().split()
        # runc puts the container in a cgroup of its own; crun runs here with cgroups disabled (the root)
        want = "/sys/fs/cgroup/" if seclib.RUNTIME == "runc" else "/sys/fs/cgroup"
        case("memlimits.asked-cgroup2.applied", len(lines) == 4 and lines[0] == uuid and
             lines[1].startswith(want) and lines[2:] == [str(1024 << 20), str(4096 << 20)],
             "the fake NVML's log: %r" % lines)
    r = s.container("memlimits.bad-value", edits=edits, tweak=runtime_hook,
                    env=base_env + ["NVIDIA_GPU_MEMORY_LIMIT=4G"])
    s.refused(r, r"NVIDIA_GPU_MEMORY_LIMIT=.*4G.* is not a whole number of MiB")
    # a spec from a newer toolkit: an action this hook does not know fails the start (nvidia-cdi-hook: exit 0)
    future = dict(mem[0], args=[a if a != "apply-cuda-memory-limits" else "future-action" for a in mem[0]["args"]])
    r = s.container("memlimits.unknown-action", edits=edits,
                    hooks=lambda _c, e: e["hooks"] + [{k: future[k] for k in ("path", "args", "env")}])
    s.refused(r, r"unknown action 'future-action'")


GROUPS = {"fallback": group_fallback, "mps": group_mps, "memlimits": group_memlimits}


def main():
    return seclib.run_groups(GROUPS, "gpulet-spec")


if __name__ == "__main__":
    sys.exit(main())
