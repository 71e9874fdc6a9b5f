#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A hostile image against `gpulet cdi-hook`, the OCI hook that runs as root on the host over a
rootfs the image author controls. Each attack builds an image (static busybox plus what the attack
needs), a bundle whose createContainer hooks are exactly those `gpulet cdi generate` writes for a
fake node (tests/lib/mkroot.sh), runs it with real runc or crun (GPULET_SEC_RUNTIME; own --root state
dir), and checks that a host canary tree (files, dirs, symlinks: type, mode, owner, inode, mtime,
content, link target) is unchanged, plus what the attack should come to: a refusal with the hook's one-line message, or a
container that started with the right result.

  escape     the update-ldcache escape (issue: CVE-2025-23267's class): ld.so.conf.d lines and
             SONAMEs leading out through /proc/1/root, /proc/<n>/root, /proc/self/root,
             /proc/self/cwd, /proc/thread-self/root; the container's ld.so.cache is still built
  ldconfig   a relative --ldconfig-path (the image's own sbin/ldconfig) refused by the hook, by
             `cdi generate --ldconfig-path` and by NVIDIA_CTK_CDI_GENERATE_LDCONFIG_PATH
  rootfs     root.path naming the host's "/" in other words (/., /./, /tmp/.., a symlink to /,
             /proc/self/root, a long ../ climb) refused as "/" is
  isolation  what ldconfig gets: no descriptor above 2, an empty environment, pid 1 of a fresh pid
             namespace (or no /proc), no way to the host through /proc; a FIFO in ld.so.conf.d
             ends in bounded time with a one-line error
  paths      the older cases: symlinked /etc (absolute, relative), '..' in --link and --folder,
             magic links, dirs swapped for symlinks while the hook runs, over-long names, huge and
             malformed OCI state, a dangling ld.so.conf.d, links through dangling links, the files
             the hook and ldconfig write planted as links to the host, and LD_PRELOAD in the
             environment of a hook spec without env
  walk       the path cases again with openat2 failing ENOSYS (noopenat2.c, a seccomp filter), so the
             hook's fallback walk meets the symlinks, magic links, races and dangling links

usage: test_hook_attacks.py GROUP...  (no argument = all). Exit 77 (CTest skip) only without root,
the runtime or busybox; everything else that goes wrong fails.
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seclib  # noqa: E402
from seclib import LIBDIR, Canary, Suite, case, compile_c, evil_lib, hooks_with, one_line_error  # noqa: E402

# The hook kills an ldconfig that runs longer than its bound (30 s), which this variable of the hook's
# environment may only shorten; the test gives the hook that much plus slack for a loaded 2-core
# machine, then unblocks the FIFO itself and fails.
LDCONFIG_TIMEOUT_ENV = "GPULET_CDI_HOOK_LDCONFIG_TIMEOUT"
LDCONFIG_BOUND = 3
FIFO_WAIT = LDCONFIG_BOUND + 15


# ---- a. the update-ldcache escape ---------------------------------------------------------------
ESCAPES = {
    "proc1-root": ["/proc/1/root"],
    "proc-n-root": ["/proc/%d/root" % n for n in range(2, 17)],  # runc init's threads, the hook
    "proc-self-root": ["/proc/self/root"],
    "proc-self-cwd": ["/proc/self/cwd"],
    "proc-thread-self-root": ["/proc/thread-self/root"],
}


def escape_image(prefixes):
    """ld.so.conf.d/evil.conf names <prefix><canary>/lib (ldconfig would add the SONAME link of the
    host's libcanary there) and image dirs holding a library whose SONAME climbs to
    <prefix><canary>/victim (ldconfig would retarget the host's victim -> x)."""

    def image(rootfs, canary):
        lines = []
        for i, prefix in enumerate(prefixes):
            d = "/usr/lib/evil%d" % i
            os.makedirs(rootfs + d)
            evil_lib(rootfs + d + "/libevil%d.so.1" % i, "../../.." + prefix + canary + "/victim")
            lines += [prefix + canary + "/lib", d]
        with open(os.path.join(rootfs, "etc/ld.so.conf.d/evil.conf"), "w") as f:
            f.write("\n".join(lines) + "\n")

    return image


def group_escape(s):
    for name, prefixes in ESCAPES.items():
        r = s.container("escape." + name, escape_image(prefixes))
        r["canary"].check(r["name"])
        s.started(r)
        s.cache_has_spec_libs(r)


# ---- b. relative --ldconfig-path ----------------------------------------------------------------
FLAG = r"--ldconfig-path"


def group_ldconfig(s):
    probe_cache = {}

    def image(rootfs, canary):
        # the image's own "ldconfig": static, writes into the host canary through /proc if it runs
        if canary not in probe_cache:
            probe_cache[canary] = compile_c("probe.c", os.path.join(os.path.dirname(canary), "image-ldconfig"),
                                            "-static", defines={"CANARY": canary, "PWN": 1})
        os.makedirs(os.path.join(rootfs, "sbin"))
        os.link(probe_cache[canary], os.path.join(rootfs, "sbin/ldconfig"))

    for rel in ("sbin/ldconfig", "./sbin/ldconfig", "@sbin/ldconfig"):
        r = s.container("ldconfig.hook-" + rel, image, hooks_with(s.edits, "update-ldcache", ["--ldconfig-path", rel]))
        r["canary"].check(r["name"])
        s.refused(r, FLAG)
        case(r["name"] + ".image-binary-not-run", not os.path.exists(os.path.join(r["rootfs"], "probe.out")),
             "the image's sbin/ldconfig ran as the hook's ldconfig")

    node = os.path.join(s.tmp, "node")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPULET_", "NVIDIA_"))}
    env["FAKE_NVML_FIXTURE"] = seclib.FIXTURE
    base = [seclib.GPULET, "cdi", "generate", "--nvml-library", seclib.FAKE_NVML_LIB, "--driver-root", node,
            "--dev-root", node, "--format", "json"]
    for how, args, extra_env in (("flag", ["--ldconfig-path", "sbin/ldconfig"], {}),
                                 ("env", [], {"NVIDIA_CTK_CDI_GENERATE_LDCONFIG_PATH": "sbin/ldconfig"})):
        out = os.path.join(s.casedir("ldconfig.generate-" + how), "out")
        os.makedirs(out)
        p = subprocess.run(base + ["--output", out + "/"] + args, capture_output=True, text=True, timeout=60,
                           env=dict(env, **extra_env))
        print("  [generate %s] rc %d: %s" % (how, p.returncode, p.stderr.strip()[-400:]))
        case("ldconfig.generate-%s.refused" % how, p.returncode != 0 and
             re.search(FLAG + "|NVIDIA_CTK_CDI_GENERATE_LDCONFIG_PATH", p.stderr) and "sbin/ldconfig" in p.stderr,
             "cdi generate with a relative ldconfig path: rc %d, stderr %r (want an error naming the flag)" % (
                 p.returncode, p.stderr[-400:]))
        case("ldconfig.generate-%s.nothing-written" % how, not os.listdir(out), "wrote %s" % os.listdir(out))


# ---- c. the rootfs is checked by identity -------------------------------------------------------
# These run the hook directly, with the OCI state on stdin and the bundle's config.json a runtime
# would give it, not through runc: for a rootfs that is the host's "/" runc would refuse it or mount
# /proc and the spec's mounts over the host's own dirs before the hook ran, which a test must not do.
# The hook's action is create-symlinks with a link into the canary: a hook that takes such a rootfs
# for a container's makes that link on the host, where the canary shows it.
def group_rootfs(s):
    d = s.casedir("rootfs")
    canary = Canary(os.path.join(d, "host/canary"))
    os.symlink("/", os.path.join(d, "root-link"))
    # the last checks of this group see every write the variants made (each is undone after its own check)
    escaped = os.path.join(canary.path, "written-through-rootfs")
    link = ["--link", "x::" + escaped]
    root_link = os.path.join(d, "root-link")
    variants = {"dot": "/.", "dot-slash": "/./", "double-slash": "//", "tmp-dotdot": "/tmp/..",
                "tmp-dotdot-slash": "/tmp/../", "symlink-to-root": root_link, "symlink-to-root-slash": root_link + "/",
                "proc-self-root": "/proc/self/root", "proc-thread-self-root": "/proc/thread-self/root",
                "relative-climb": "../" * 40, "tmp-climb": "/tmp/" + "../" * 40 + "tmp/..",
                "bundle-climb": d + "/" + "../" * 40}

    def hook(field, value):
        bundle = os.path.join(d, "bundle")
        os.makedirs(bundle, exist_ok=True)
        with open(os.path.join(bundle, "config.json"), "w") as f:
            json.dump({"ociVersion": "1.0.2", "root": {"path": value if field == "config" else "rootfs"}}, f)
        state = {"ociVersion": "1.0.2", "id": "sec", "status": "creating", "pid": os.getpid(), "bundle": bundle}
        if field == "state":
            state["root"] = value  # crun's extra member, which the hook prefers
        p = seclib.run_hook(s.edits, "create-symlinks", link, json.dumps(state).encode())
        return p.returncode, p.stderr.decode(errors="replace").strip()

    for field in ("config", "state"):
        base_rc, base_err = hook(field, "/")
        print("  [rootfs %s /] rc %d: %s" % (field, base_rc, base_err))
        case("rootfs.%s-slash.refused" % field, base_rc != 0 and "\n" not in base_err and base_err,
             "root.path / : rc %d, %r" % (base_rc, base_err))
        for label, v in variants.items():
            rc, err = hook(field, v)
            print("  [rootfs %s %s] rc %d: %s" % (field, label, rc, err[:300]))
            shown = (v, os.path.join(d, "bundle", v), os.path.join(d, "bundle") + "/" + v)
            case("rootfs.%s-%s.refused-like-slash" % (field, label),
                 rc == base_rc and same_refusal(err, base_err, shown),
                 "root %r: rc %d %r; '/' gives rc %d %r" % (v, rc, err[:300], base_rc, base_err))
            case("rootfs.%s-%s.nothing-written-on-host" % (field, label), not os.path.lexists(escaped),
                 "the hook created %s on the host" % escaped)
            if os.path.lexists(escaped):
                os.unlink(escaped)  # the canary's fingerprint still shows it happened
    canary.check("rootfs")


def same_refusal(err, base, shown):
    """The one-line refusal "/" gets, word for word, once the rootfs path it names (one of shown: the
    value, or the value joined to the bundle) is taken out."""
    if "\n" in err or not err:
        return False
    for path in shown:
        err = err.replace(" %s " % path, " ")
    return err == base


# ---- d. what ldconfig gets, and what a hung one does --------------------------------------------
def group_isolation(s):
    def probe_spec(canary):
        probe = compile_c("probe.c", os.path.join(os.path.dirname(canary), "probe"), "-static",
                          defines={"CANARY": canary})
        return seclib.node_spec(s.tmp, "--ldconfig-path", probe)

    r = s.container("isolation.probe", edits=probe_spec)
    r["canary"].check(r["name"])
    s.started(r)
    out_file = os.path.join(r["rootfs"], "probe.out")
    if not case("isolation.probe.ran", os.path.exists(out_file), "no /probe.out in the rootfs: the hook did not "
                "run the probe (--ldconfig-path) in the container's root"):
        return
    facts = [ln.split("=", 1) for ln in open(out_file).read().splitlines() if "=" in ln]
    print("  [isolation.probe] saw: %s" % facts)
    get = {}
    for k, v in facts:
        get.setdefault(k, []).append(v)
    fds = {k: v for k, v in facts if k.startswith("fd.")}
    case("isolation.no-fd-above-2", not fds, "ldconfig inherited descriptors %s" % fds)
    case("isolation.empty-environment", "env" not in get, "ldconfig's environment: %s" % get.get("env"))
    pid = int(get["pid"][0])
    case("isolation.pid-1-or-no-proc", pid == 1 or get["proc1root"] == ["-"],
         "ldconfig is pid %d and sees /proc/1/root -> %s: it shares a pid namespace and a /proc with "
         "the runtime" % (pid, get["proc1root"]))
    case("isolation.cwd-is-root", get["selfcwd"] in (["/"], ["-"]), "cwd %s" % get["selfcwd"])
    case("isolation.host-unreachable-through-proc", "reach" not in get,
         "ldconfig reaches the host canary as %s" % get.get("reach"))

    # a FIFO in ld.so.conf.d: ldconfig blocks opening it; the hook must give up in bounded time
    def fifo_image(rootfs, canary):
        os.mkfifo(os.path.join(rootfs, "etc/ld.so.conf.d/hang.conf"))

    def unblock(rootfs):
        try:
            fd = os.open(os.path.join(rootfs, "etc/ld.so.conf.d/hang.conf"), os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass

    r = s.container("isolation.fifo", fifo_image, timeout=FIFO_WAIT, on_timeout=unblock,
                    hooks=hooks_with(s.edits, "update-ldcache", env=["%s=%d" % (LDCONFIG_TIMEOUT_ENV, LDCONFIG_BOUND)]))
    r["canary"].check(r["name"])
    case("isolation.fifo.bounded", r["rc"] is not None, "container creation still hung after %ds (the hook's "
         "bound: %s=%d)" % (FIFO_WAIT, LDCONFIG_TIMEOUT_ENV, LDCONFIG_BOUND))
    if r["rc"] is not None:
        s.refused(r, r"update-ldcache: .*(did not finish within %d s|timed out)" % LDCONFIG_BOUND)


# ---- e. the older cases -------------------------------------------------------------------------
RENAME_EXCHANGE = 2


def race_script():
    """A background process swapping DIR for a symlink (renameat2 RENAME_EXCHANGE) until a deadline."""
    return r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, until = sys.argv[1].encode(), sys.argv[2].encode(), time.time() + float(sys.argv[3])
while time.time() < until:
    libc.renameat2(-100, a, -100, b, %d)
""" % RENAME_EXCHANGE


CLIMB = "../" * 12


def resolution_cases(s, walk):
    """Paths the image points at the host, met by the hook's openat2 resolver or (walk) its walk."""
    g = "walk." if walk else "paths."

    # symlinked /etc, absolute and relative, to a host dir
    for how in ("absolute", "relative"):
        def image(rootfs, canary, how=how):
            os.rename(os.path.join(rootfs, "etc"), os.path.join(rootfs, "etc.real"))
            os.symlink(canary + "/sub" if how == "absolute" else CLIMB + canary.lstrip("/") + "/sub",
                       os.path.join(rootfs, "etc"))
            if s.rt.name == "crun":
                # crun writes /etc/hostname itself, resolved inside the rootfs, and stops where that
                # /etc leads nowhere: the target is made inside, so the hooks get to run at all
                os.makedirs(rootfs + canary + "/sub")

        r = s.container(g + "etc-symlink-" + how, image, walk=walk)
        r["canary"].check(r["name"])
        confined = os.path.join(r["rootfs"], r["canary"].path.lstrip("/"), "sub", "ld.so.conf.d")
        case(r["name"] + ".inside-rootfs-or-refused", (r["rc"] == 0 and "STARTED" in r["out"] and
                                                       os.path.isdir(confined)) or
             (r["rc"] and one_line_error(r["err"])), "want the hook's files under %s, or its refusal; rc %s %r" % (
                 confined, r["rc"], r["err"][-400:]))

    # '..' CLIMBs in --link (target and link) and --folder
    r = s.container(g + "link-dotdot", walk=walk, hooks=lambda c, e: hooks_with(e, "create-symlinks", [
        "--link", "%s%s/x::/%s%s/newlink" % (CLIMB, c.lstrip("/"), CLIMB, c.lstrip("/"))]))
    r["canary"].check(r["name"])
    s.started(r)
    canary = r["canary"].path
    inside = os.path.join(r["rootfs"], canary.lstrip("/"), "newlink")
    case(r["name"] + ".link-made-inside", os.path.islink(inside), "no %s" % inside)

    # magic links: the image's ld.so.conf.d and the GBM dir through /proc's magic links
    for what, rel, target in (("ld.so.conf.d", "etc/ld.so.conf.d", "/proc/self/root%s/sub"),
                              ("gbm-dir", LIBDIR.lstrip("/") + "/gbm", "/proc/1/root%s/sub"),
                              ("ld.so.conf.d-fd", "etc/ld.so.conf.d", "/proc/self/cwd%s/sub")):
        def image(rootfs, canary, rel=rel, target=target):
            p = os.path.join(rootfs, rel)
            if os.path.isdir(p):
                os.rmdir(p)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            os.symlink(target % canary, p)

        r = s.container(g + "magic-" + what, image, walk=walk)
        r["canary"].check(r["name"])
        case(r["name"] + ".started-or-refused", (r["rc"] == 0 and "STARTED" in r["out"]) or
             (r["rc"] and one_line_error(r["err"])), "rc %s %r" % (r["rc"], r["err"][-400:]))

    # a dir swapped for a symlink to the host while the hook runs (bounded: a few runs)
    for what, rel in (("ld.so.conf.d", "etc/ld.so.conf.d"), ("gbm-dir", LIBDIR.lstrip("/") + "/gbm")):
        def image(rootfs, canary, rel=rel):
            p = os.path.join(rootfs, rel)
            os.makedirs(p, exist_ok=True)
            os.symlink(canary + "/sub", p + ".swap")

        r = s.container(g + "race-" + what, image, script="true", walk=walk)
        p = os.path.join(r["rootfs"], rel)
        racer = subprocess.Popen([sys.executable, "-c", race_script(), p, p + ".swap", "3"])
        outcomes = []
        try:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 1.5:
                rc, out, err, _t = s.rt.run(os.path.dirname(r["rootfs"]), timeout=20)
                outcomes.append("ok" if rc == 0 else (one_line_error(err)[:120] or "rc %s %s" % (rc, err[-200:])))
        finally:
            racer.kill()
            racer.wait()
        print("  [%s] %d runs: %s" % (r["name"], len(outcomes), sorted(set(outcomes))))
        r["canary"].check(r["name"])
        case(r["name"] + ".each-run-started-or-refused", outcomes and all(
            o == "ok" or o.startswith("gpulet cdi-hook") for o in outcomes), "outcomes %s" % outcomes)

    # the files the hook and ldconfig write, planted as links to the host: ld.so.cache through
    # /proc/1/root, the hook's drop-ins, ld.so.conf itself dangling: each is replaced, never followed
    def planted_outputs(rootfs, canary):
        etc = os.path.join(rootfs, "etc")
        os.unlink(os.path.join(etc, "ld.so.conf"))
        os.symlink(canary + "/conf-absent", os.path.join(etc, "ld.so.conf"))
        os.symlink("/proc/1/root%s/x" % canary, os.path.join(etc, "ld.so.cache"))
        for name in ("00-nvcr-gpulet.conf", "zz-nvcr-gpulet.conf"):
            os.symlink(canary + "/sub/deeper/b.bin", os.path.join(etc, "ld.so.conf.d", name))

    r = s.container(g + "planted-output-links", planted_outputs, walk=walk)
    r["canary"].check(r["name"])
    s.started(r)
    s.cache_has_spec_libs(r)
    case(r["name"] + ".host-file-not-created", not os.path.lexists(r["canary"].path + "/conf-absent"),
         "the hook created the host's %s/conf-absent" % r["canary"].path)

    # ldconfig's temp file planted as a link to a host file: ldconfig refuses it (O_NOFOLLOW), the
    # hook passes that on in one line
    def planted_temp(rootfs, canary):
        os.symlink("/proc/1/root%s/a.txt" % canary, os.path.join(rootfs, "etc/ld.so.cache~"))

    r = s.container(g + "planted-cache-temp-link", planted_temp, walk=walk)
    r["canary"].check(r["name"])
    s.refused(r, r"update-ldcache: .*ldconfig")

    # a dangling /etc/ld.so.conf.d pointing at a host path that does not exist
    def dangling_conf(rootfs, canary):
        os.rmdir(os.path.join(rootfs, "etc/ld.so.conf.d"))
        os.symlink(canary + "/conf.d-absent", os.path.join(rootfs, "etc/ld.so.conf.d"))

    r = s.container(g + "dangling-ld.so.conf.d", dangling_conf, walk=walk)
    r["canary"].check(r["name"])
    s.started(r)
    s.cache_has_spec_libs(r)
    case(r["name"] + ".host-dir-not-created", not os.path.lexists(r["canary"].path + "/conf.d-absent"),
         "the hook created the host's %s/conf.d-absent" % r["canary"].path)

    # create-symlinks through dangling links to the host: an existing link at the link's name is
    # replaced, never followed; a dangling link as the link's directory is resolved inside the rootfs
    # (the dir made there) or refused with the hook's line, never made on the host
    def dangling_file(rootfs, canary):
        os.makedirs(rootfs + LIBDIR)
        os.symlink(canary + "/file-absent", rootfs + LIBDIR + "/libGLX_indirect.so.0")

    r = s.container(g + "link-over-dangling-link", dangling_file, walk=walk)
    r["canary"].check(r["name"])
    s.started(r)
    glx = os.path.join(r["rootfs"], LIBDIR.lstrip("/"), "libGLX_indirect.so.0")
    case(r["name"] + ".link-replaced", os.path.islink(glx) and os.readlink(glx).startswith("libGLX_nvidia.so."),
         "%s -> %s" % (glx, os.path.islink(glx) and os.readlink(glx)))

    def dangling_dir(rootfs, canary):
        os.makedirs(rootfs + LIBDIR)
        os.symlink(canary + "/gbm-absent", rootfs + LIBDIR + "/gbm")

    r = s.container(g + "link-in-dangling-dir", dangling_dir, walk=walk)
    r["canary"].check(r["name"])
    gbm = os.path.join(r["rootfs"], r["canary"].path.lstrip("/"), "gbm-absent/nvidia-drm_gbm.so")
    inside = os.path.islink(gbm) and os.readlink(gbm) == "../libnvidia-allocator.so.1"
    case(r["name"] + ".inside-rootfs-or-refused", (r["rc"] == 0 and "STARTED" in r["out"] and inside) or
         (r["rc"] and re.search(r"--link .*gbm/nvidia-drm_gbm\.so", one_line_error(r["err"]))),
         "want %s made inside the rootfs, or the hook's refusal naming the link; rc %s %r" % (
             gbm, r["rc"], r["err"][-400:]))

def group_paths(s):
    """The resolution cases with openat2, then those about arguments, names and the environment."""
    resolution_cases(s, walk=False)
    e = s.edits
    r = s.container("paths.folder-dotdot", hooks=lambda c, e: hooks_with(e, "update-ldcache", [
        "--folder", "/" + CLIMB + c.lstrip("/") + "/lib"]))
    r["canary"].check(r["name"])
    s.started(r)

    # over-long names: a component of NAME_MAX+1, a path past PATH_MAX
    for what, link in (("name-max", "/usr/lib/" + "n" * 256), ("path-max", "/" + "d/" * 2100 + "l")):
        r = s.container("paths.long-" + what, None, hooks_with(e, "create-symlinks", ["--link", "x::" + link]))
        r["canary"].check(r["name"])
        s.refused(r, r"too long|ENAMETOOLONG|longer")

    # LD_PRELOAD in the container's environment reaches a hook spec without env
    def preload_image(rootfs, canary):
        compile_c("evil_preload.c", os.path.join(rootfs, "evil.so"), "-shared", "-fPIC", defines={"CANARY": canary})

    r = s.container("paths.hook-env-ld-preload", preload_image, hooks=lambda c, e: hooks_with(e, drop_env=True),
                    env=lambda rootfs: ["PATH=/bin", "LD_PRELOAD=" + os.path.join(rootfs, "evil.so")])
    r["canary"].check(r["name"])
    s.started(r)

    group_state(s)


def group_walk(s):
    resolution_cases(s, walk=True)


def group_state(s):
    """Huge and malformed OCI state on the hook's stdin: one line, exit 1, nothing done."""
    d = s.casedir("state")
    canary = Canary(os.path.join(d, "host/canary"))
    link = ["--link", "x::%s/written" % canary.path]
    bundle = os.path.join(d, "bundle")
    os.makedirs(os.path.join(bundle, "rootfs"))
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump({"root": {"path": canary.path}}, f)
    huge_bundle = os.path.join(d, "huge")
    os.makedirs(huge_bundle)
    with open(os.path.join(huge_bundle, "config.json"), "w") as f:
        f.write('{"root": {"path": "%s"}, "pad": "%s"}' % (canary.path, "x" * (17 << 20)))
    states = {
        "empty": b"",
        "huge": b'{"bundle": "' + bundle.encode() + b'", "pad": "' + b"x" * (1 << 20) + b'"}',
        "huge-garbage": b"\xff" * ((1 << 20) + 1),
        "truncated": b'{"bundle": "' + bundle.encode(),
        "array": b"[]",
        "deep": b"[" * 100000 + b"]" * 100000,
        "bundle-number": b'{"bundle": 5}',
        "bundle-relative": b'{"bundle": "relative/dir"}',
        "bundle-nul": b'{"bundle": "' + bundle.encode() + b'\\u0000/x"}',
        "bundle-missing": b'{"bundle": "/nonexistent/bundle"}',
        "duplicate-bundle": b'{"bundle": "/nonexistent", "bundle": "' + bundle.encode() + b'"}',
        "huge-config": b'{"bundle": "' + huge_bundle.encode() + b'"}',
    }
    for name, data in states.items():
        t0 = time.monotonic()
        p = seclib.run_hook(s.edits, "create-symlinks", link, data)
        err = p.stderr.decode(errors="replace").strip()
        print("  [state %s] rc %d in %.1fs: %s" % (name, p.returncode, time.monotonic() - t0, err[:200]))
        case("state.%s.refused" % name, p.returncode == 1 and err.startswith("gpulet cdi-hook") and "\n" not in err,
             "rc %d, stderr %r" % (p.returncode, err[:400]))
    canary.check("state")


GROUPS = {"escape": group_escape, "ldconfig": group_ldconfig, "rootfs": group_rootfs, "isolation": group_isolation,
          "paths": group_paths, "walk": group_walk}


def main():
    return seclib.run_groups(GROUPS, "gpulet-sec")


if __name__ == "__main__":
    sys.exit(main())
