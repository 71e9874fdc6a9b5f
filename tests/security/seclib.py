#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Shared parts of the security suite (not a test itself): a host canary tree and its fingerprint,
a fake node root and the CDI spec `gpulet cdi generate` writes for it, OCI bundles run by a real
runtime (runc or crun, GPULET_SEC_RUNTIME, default runc) with their own state dir, the case
harness the attack scripts share (Suite), and the pass/fail bookkeeping.

Everything lives under one temp dir per test run; containers and runtime state are removed even when a
check fails or the run is interrupted.
"""
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

SRC = os.environ["GPULET_SRC"]
BUILD = os.environ["GPULET_BUILD"]
GPULET = os.environ["GPULET"]
FAKE_NVML_LIB = os.environ["FAKE_NVML_LIB"]
CC = os.environ.get("CC") or "cc"
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(SRC, "tests/fixtures/single-t4.json")
LIBDIR = "/usr/lib/x86_64-linux-gnu"
# the OCI runtime every container of the run goes through: runc (Debian 12: 1.1.5) or crun (1.8.1)
RUNTIME = os.environ.get("GPULET_SEC_RUNTIME") or "runc"

failures = []
passes = []


def squeeze(text):
    """Long repeats (a path of 2,000 'd/') shown as one unit and a count."""
    return re.sub(r"(.{1,8}?)\1{15,}", lambda m: "%s{x%d}" % (m.group(1), len(m.group(0)) // len(m.group(1))), text)


def case(name, cond, detail=""):
    """One named check: printed PASS/FAIL, failures counted for the exit status."""
    if cond:
        passes.append(name)
        print("PASS %s" % name, flush=True)
    else:
        failures.append(name)
        print("FAIL %s: %s" % (name, squeeze(detail)), flush=True)
    return bool(cond)


def finish():
    print("%d passed, %d failed%s" % (len(passes), len(failures), (": " + ", ".join(failures)) if failures else ""))
    return 1 if failures else 0


def skip(why):
    print("SKIP: %s" % why)
    sys.exit(77)


def preflight():
    """Exit 77 only where no container can run here at all (not root, no runtime, no busybox)."""
    if RUNTIME not in ("runc", "crun"):
        raise SystemExit("GPULET_SEC_RUNTIME=%r: runc or crun" % RUNTIME)
    if os.geteuid() != 0:
        skip("%s needs root here (mount, mknod, chroot)" % RUNTIME)
    for tool in (RUNTIME, "ldconfig"):
        if not shutil.which(tool):
            skip("%s not found" % tool)
    if not os.path.exists("/bin/busybox"):
        skip("/bin/busybox missing (busybox-static)")


def sh(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError("%s: rc %d: %s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout


def compile_c(src, out, *flags, defines=None):
    """Build one of this dir's C files (or C text given as src with a newline) with CC."""
    args = [CC, "-O1", "-o", out]
    for k, v in (defines or {}).items():
        args.append("-D%s=%s" % (k, json.dumps(v)))
    if "\n" in src:
        args += list(flags) + ["-x", "c", "-"]
        p = subprocess.run(args, input=src, capture_output=True, text=True)
    else:
        p = subprocess.run(args + list(flags) + [os.path.join(HERE, src)], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("compiling %s: %s" % (src if "\n" not in src else out, p.stderr))
    return out


def evil_lib(out, soname):
    """A shared library whose SONAME is soname (ldconfig makes a link by that name next to it)."""
    return compile_c("int gpulet_sec_evil(void) { return 1; }\n", out, "-shared", "-fPIC", "-nostdlib",
                     "-Wl,-soname," + soname)


# ---- the host canary ----------------------------------------------------------------------------
def make_canary(path):
    """A host tree a hostile image aims at: files, a dir, a mode-0700 dir, symlinks (victim -> x),
    and a library dir with a library whose SONAME link is absent (ldconfig over it would add one)."""
    os.makedirs(os.path.join(path, "sub/deeper"))
    os.makedirs(os.path.join(path, "lib"))
    os.makedirs(os.path.join(path, "private"), mode=0o700)
    with open(os.path.join(path, "a.txt"), "w") as f:
        f.write("host canary\n")
    with open(os.path.join(path, "sub/deeper/b.bin"), "wb") as f:
        f.write(bytes(range(256)))
    os.chmod(os.path.join(path, "sub/deeper/b.bin"), 0o600)
    with open(os.path.join(path, "x"), "w") as f:
        f.write("x\n")
    os.symlink("x", os.path.join(path, "victim"))
    os.symlink("/nonexistent/host/target", os.path.join(path, "dangling"))
    os.symlink("sub", os.path.join(path, "sublink"))
    evil_lib(os.path.join(path, "lib/libcanary.so.1.0"), "libcanary.so.1")
    os.symlink("libcanary.so.1.0", os.path.join(path, "lib/libcanary.so"))
    return path


def fingerprint(path):
    """Every entry under path: type, mode, owner, inode, mtime, size, content hash, link target."""
    out = {}
    for base, dirs, files in os.walk(path):
        for name in [""] + dirs + files if base == path else dirs + files:
            p = os.path.join(base, name) if name else base
            st = os.lstat(p)
            rec = [stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_ino, st.st_size,
                   st.st_mtime_ns]
            if stat.S_ISLNK(st.st_mode):
                rec.append(os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    rec.append(hashlib.sha256(f.read()).hexdigest())
            out[os.path.relpath(p, path)] = rec
    return out


FIELDS = ("type", "mode", "uid", "gid", "inode", "size", "mtime", "content")


def diff(before, after):
    """What changed, entry by entry: new and removed entries, and the fields that differ."""
    lines = []
    for k in sorted(set(before) | set(after)):
        b, a = before.get(k), after.get(k)
        if b == a:
            continue
        if b is None or a is None:
            lines.append("%s %s" % (k, "appeared" if b is None else "vanished") +
                         (" (-> %r)" % a[7] if a and stat.S_ISLNK(a[0]) else ""))
            continue
        lines.append("%s: %s" % (k, ", ".join("%s %r -> %r" % (f, x, y) for f, x, y in zip(FIELDS, b, a) if x != y)))
    return "; ".join(lines) or "none"


class Canary:
    """A canary tree plus read-only looks at a few host files a broken hook would write (the host's
    own ld.so.conf.d and ld.so.cache): unchanged() compares both with the state at creation."""
    HOST = ("/etc/ld.so.conf.d", "/etc/ld.so.cache", "/etc/ld.so.conf")

    def __init__(self, path):
        self.path = make_canary(path)
        self.before = fingerprint(path)
        self.host_before = self.host_view()

    def host_view(self):
        view = {}
        for p in self.HOST:
            try:
                st = os.lstat(p)
                view[p] = (st.st_ino, st.st_mtime_ns, st.st_size,
                           sorted(os.listdir(p)) if stat.S_ISDIR(st.st_mode) else None)
            except FileNotFoundError:
                view[p] = None
        return view

    def check(self, name):
        after = fingerprint(self.path)
        case(name + ".host-canary-unchanged", after == self.before, "host canary %s changed: %s" % (
            self.path, diff(self.before, after)))
        host = self.host_view()
        case(name + ".host-etc-unchanged", host == self.host_before, "host files changed: %s -> %s" % (
            self.host_before, host))


# ---- the fake node and its CDI spec -------------------------------------------------------------
def generate(tmp, *extra, gpulet=None):
    """A fake node root (tests/lib/mkroot.sh, made once per tmp) and the spec `gpulet cdi generate`
    writes for it (gpulet: this binary, default GPULET): (spec-level containerEdits, its stderr)."""
    node = os.path.join(tmp, "node")
    if not os.path.isdir(node):
        sh(["sh", os.path.join(SRC, "tests/lib/mkroot.sh"), node, FIXTURE], env=dict(os.environ, GPULET_BUILD=BUILD))
    out = tempfile.mkdtemp(prefix="spec-", dir=tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPULET_", "NVIDIA_"))}
    p = subprocess.run([gpulet or GPULET, "cdi", "generate", "--nvml-library", FAKE_NVML_LIB, "--driver-root", node,
                        "--dev-root", node, "--format", "json", "--output", out + "/"] + list(extra),
                       capture_output=True, text=True, env=dict(env, FAKE_NVML_FIXTURE=FIXTURE))
    if p.returncode != 0:
        raise RuntimeError("cdi generate: rc %d: %s" % (p.returncode, p.stderr))
    with open(os.path.join(out, "nvidia.com-gpu.json")) as f:
        return json.load(f)["containerEdits"], p.stderr


def node_spec(tmp, *extra):
    """The spec-level containerEdits (mounts, hooks) `gpulet cdi generate` writes for the fake node,
    hooks by the generator's default binary."""
    return generate(tmp, *extra)[0]


def hook_by_action(edits, action):
    """The spec's hook running ACTION, and the argv prefix up to and including ACTION."""
    for h in edits["hooks"]:
        if action in h["args"]:
            return h, h["args"][:h["args"].index(action) + 1]
    raise RuntimeError("no %s hook in the spec: %s" % (action, edits["hooks"]))


def run_hook(edits, action, args, stdin, timeout=30, env=None):
    """Run the spec's hook binary for ACTION directly (not through a runtime) with crafted OCI state."""
    h, prefix = hook_by_action(edits, action)
    return subprocess.run(prefix + list(args), executable=h["path"], input=stdin, capture_output=True,
                          timeout=timeout, env=env if env is not None else {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})


# ---- images and bundles -------------------------------------------------------------------------
def busybox_rootfs(rootfs):
    """A minimal image: static busybox, /etc/ld.so.conf including ld.so.conf.d."""
    os.makedirs(os.path.join(rootfs, "bin"))
    os.makedirs(os.path.join(rootfs, "etc/ld.so.conf.d"))
    shutil.copy("/bin/busybox", os.path.join(rootfs, "bin/busybox"))
    for c in ("sh", "cat", "ls", "echo"):
        os.symlink("busybox", os.path.join(rootfs, "bin", c))
    with open(os.path.join(rootfs, "etc/ld.so.conf"), "w") as f:
        f.write("include /etc/ld.so.conf.d/*.conf\n")
    return rootfs


_base_config = None


def base_config():
    global _base_config
    if _base_config is None:
        d = tempfile.mkdtemp(prefix="gpulet-sec-spec-")
        try:
            sh([RUNTIME, "spec"], cwd=d)
            with open(os.path.join(d, "config.json")) as f:
                _base_config = json.load(f)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return json.loads(json.dumps(_base_config))


def write_bundle(bundle, rootfs, hooks, mounts=(), script="echo STARTED", env=None, tweak=None):
    """config.json of the runtime's default spec: the rootfs, the CDI hooks as createContainer hooks (path,
    args, env, timeout as the spec says) and the spec's mounts as bind mounts; tweak(config) last."""
    c = base_config()
    c["root"] = {"path": rootfs, "readonly": False}
    c["process"]["terminal"] = False
    c["process"]["args"] = ["/bin/sh", "-c", script]
    if env is not None:
        c["process"]["env"] = list(env)
    c["hostname"] = "gpulet-sec"
    for m in mounts:
        c["mounts"].append({"destination": m["containerPath"], "type": "bind", "source": m["hostPath"],
                            "options": m.get("options", ["ro", "nosuid", "nodev", "rbind", "rprivate"])})
    hk = []
    for h in hooks:
        o = {"path": h["path"], "args": h["args"]}
        for k in ("env", "timeout"):
            if k in h:
                o[k] = h[k]
        hk.append(o)
    c["hooks"] = {"createContainer": hk}
    if tweak:
        tweak(c)
    os.makedirs(bundle, exist_ok=True)
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
    return bundle


def descendants(pid):
    """Every process below pid now (from /proc/*/stat's parent pids)."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def hybrid_cgroups():
    """A cgroup v1 host with a cgroup2 mount that has controllers (/sys/fs/cgroup/unified)."""
    try:
        with open("/sys/fs/cgroup/unified/cgroup.controllers") as f:
            return bool(f.read().split())
    except OSError:
        return False


class Runtime:
    """The real runtime (RUNTIME) with its own --root state dir; every container it ran is deleted on
    close(). runc and crun take the same commands here."""

    def __init__(self, tmp):
        self.name = RUNTIME
        self.state = os.path.join(tmp, "%s-state" % RUNTIME)
        os.makedirs(self.state, exist_ok=True)
        self.n = 0
        self.cmd = [RUNTIME, "--root", self.state]
        if RUNTIME == "crun":
            # nothing here is about cgroups: crun runs without them; and crun 1.8 refuses a cgroup v1
            # host whose cgroup2 mount has controllers ("hybrid mode"), so there it runs in a mount
            # namespace of its own without that mount (nothing changes on the machine)
            self.cmd.append("--cgroup-manager=disabled")
            if hybrid_cgroups():
                self.cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            'umount /sys/fs/cgroup/unified && exec "$@"', "sh"] + self.cmd

    def run(self, bundle, timeout=30, on_timeout=None):
        """RUNTIME run; returns (rc, stdout, stderr, seconds); rc None when it ran past timeout (then
        on_timeout() is called to unblock it, the runtime and its children are killed)."""
        self.n += 1
        cid = "gpulet-sec-%d-%d" % (os.getpid(), self.n)
        with open(os.path.join(bundle, "config.json")) as f:
            hook_err = json.load(f).get("annotations", {}).get("run.oci.hooks.stderr")
        if hook_err and os.path.exists(hook_err):
            os.unlink(hook_err)
        t0 = time.monotonic()
        p = subprocess.Popen(self.cmd + ["run", "--bundle", bundle, cid], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = p.communicate(timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            if on_timeout:
                on_timeout()
            self.kill_group(p)
            out, err = p.communicate()
            rc = None
        except BaseException:  # interrupted (SIGTERM, ^C): the runtime and its children go too
            self.kill_group(p)
            p.wait()
            raise
        finally:
            self.delete(cid)
        if hook_err and os.path.exists(hook_err):  # crun's hooks wrote their stderr there
            with open(hook_err, errors="replace") as f:
                err = f.read() + err
        return rc, out, err, time.monotonic() - t0

    @staticmethod
    def kill_group(p):
        """SIGKILL the runtime and every process below it: runc init leaves runc's process group, and
        killing it (pid 1 of the container's pid namespace) ends the hooks and their children."""
        tree = descendants(p.pid)
        for pid in [p.pid] + tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def delete(self, cid):
        subprocess.run(self.cmd + ["kill", cid, "KILL"], capture_output=True)
        subprocess.run(self.cmd + ["delete", "--force", cid], capture_output=True)
        # a container killed while being created has no state for runc to delete: its cgroups stay
        for _ in range(20):
            left = [d for d in glob.glob("/sys/fs/cgroup/*/" + cid) + glob.glob("/sys/fs/cgroup/" + cid)
                    if os.path.isdir(d)]
            for d in left:
                try:
                    os.rmdir(d)
                except OSError:
                    pass
            if not any(os.path.isdir(d) for d in left):
                return
            time.sleep(0.1)

    def close(self):
        p = subprocess.run(self.cmd + ["list", "-q"], capture_output=True, text=True)
        for cid in p.stdout.split():
            self.delete(cid)


def one_line_error(err, prefix="gpulet cdi-hook"):
    """The hook's message as the runtime shows it: the first line naming the hook, or ''."""
    for line in err.replace("\\n", "\n").splitlines():
        if prefix in line:
            return line[line.index(prefix):]
    return ""


def ldconfig_cache(path):
    """glibc's own reading of a cache file (ldconfig -p -C): the library paths it lists."""
    p = subprocess.run(["ldconfig", "-p", "-C", path], capture_output=True, text=True)
    return [ln.rsplit("=> ", 1)[1].strip() for ln in p.stdout.splitlines() if "=> " in ln]



# ---- the case harness the attack scripts share --------------------------------------------------
LIBCUDA = LIBDIR + "/libcuda.so.1"


class Suite:
    """One group's run: a temp dir, the runtime, the spec `cdi generate` writes for a fake node."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.rt = Runtime(tmp)
        self.edits = node_spec(tmp)
        self.n = 0

    def casedir(self, name):
        self.n += 1
        d = os.path.join(self.tmp, "%02d-%s" % (self.n, re.sub(r"[^A-Za-z0-9_.-]", "_", name)))
        os.makedirs(d)
        return d

    def walked(self, hooks):
        """The hooks run under noopenat2 (openat2 fails ENOSYS): the hook resolves paths by its walk."""
        if not hasattr(self, "noopenat2"):
            self.noopenat2 = compile_c("noopenat2.c", os.path.join(self.tmp, "noopenat2"), "-static")
        return [dict(h, path=self.noopenat2, args=[self.noopenat2, h["path"]] + h["args"]) for h in hooks]

    def container(self, name, image=None, hooks=None, edits=None, script="echo STARTED", env=None, timeout=30,
                  on_timeout=None, walk=False, tweak=None):
        """A case dir with its own canary, an image made by image(rootfs, canary_path), run by the
        runtime with the spec's hooks and mounts. edits, hooks and env may be functions of the canary
        path (hooks: of the canary path and the spec's edits; env: of the rootfs); tweak(config,
        canary_path) edits the OCI config last. walk: the hooks resolve paths without openat2.
        Returns what happened."""
        d = self.casedir(name)
        canary = Canary(os.path.join(d, "host/canary"))
        rootfs = busybox_rootfs(os.path.join(d, "bundle/rootfs"))
        edits = (edits(canary.path) if callable(edits) else edits) or self.edits
        hooks = hooks(canary.path, edits) if callable(hooks) else hooks
        if walk:
            hooks = self.walked(edits["hooks"] if hooks is None else hooks)
        env = env(rootfs) if callable(env) else env
        if image:
            image(rootfs, canary.path)
        hook_err = os.path.join(d, "hooks.stderr")

        def edit(c):
            if self.rt.name == "crun":
                # crun does not put a failed hook's stderr in its own message: it writes it here
                c.setdefault("annotations", {})["run.oci.hooks.stderr"] = hook_err
            if tweak:
                tweak(c, canary.path)

        bundle = write_bundle(os.path.join(d, "bundle"), rootfs, edits["hooks"] if hooks is None else hooks,
                              edits.get("mounts", []), script, env, edit)
        rc, out, err, secs = self.rt.run(bundle, timeout, on_timeout and (lambda: on_timeout(rootfs)))
        print(squeeze("  [%s] %s rc %s in %.1fs; stdout %r; stderr %r" % (name, self.rt.name, rc, secs, out[-300:],
                                                                        err[-2000:])))
        return {"name": name, "canary": canary, "rootfs": rootfs, "rc": rc, "out": out, "err": err, "secs": secs,
                "dir": d, "bundle": bundle}

    def started(self, r):
        return case(r["name"] + ".container-started", r["rc"] == 0 and "STARTED" in r["out"],
                    "%s rc %s, stdout %r, stderr %r" % (self.rt.name, r["rc"], r["out"][-200:], r["err"][-2000:]))

    def refused(self, r, pattern):
        """The runtime failed because the hook refused, with one line matching pattern."""
        line = one_line_error(r["err"])
        return case(r["name"] + ".refused", r["rc"] not in (0, None) and "STARTED" not in r["out"] and
                    re.search(pattern, line), "want %s to fail with the hook's line matching /%s/; rc %s, "
                    "stdout %r, stderr %r" % (self.rt.name, pattern, r["rc"], r["out"][-200:], r["err"][-2000:]))

    def cache_has_spec_libs(self, r):
        libs = ldconfig_cache(os.path.join(r["rootfs"], "etc/ld.so.cache"))
        case(r["name"] + ".ld.so.cache-built", LIBCUDA in libs,
             "ldconfig -p -C <rootfs>/etc/ld.so.cache lists no %s: %s" % (LIBCUDA, libs[:8]))


def hooks_with(edits, action=None, extra=(), drop_env=False, env=()):
    """A copy of the spec's hooks, extra args (and env) added to ACTION's hook, env dropped if asked."""
    out = []
    for h in edits["hooks"]:
        h = json.loads(json.dumps(h))
        if action in h["args"]:
            h["args"] += list(extra)
            h["env"] = h.get("env", []) + list(env)
        if drop_env:
            h.pop("env", None)
        out.append(h)
    return out


def run_groups(groups, prefix):
    """main() of an attack script: the groups named on the command line (none: all), each in its own
    temp dir with its own Suite; exit 1 when a check failed, 77 when nothing can run here."""
    preflight()
    # a SIGTERM (ctest's timeout, a CI cancel) still runs the cleanup below: containers, state, temp dirs
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("SIGTERM: cleaning up"))
    for g in sys.argv[1:] or list(groups):
        with TempDir("%s-%s-" % (prefix, g)) as tmp:
            s = Suite(tmp)
            try:
                groups[g](s)
            except Exception as ex:  # a broken case is a failure, not a crash that skips the cleanup
                import traceback
                traceback.print_exc()
                case("%s.completed" % g, False, "%s: %s" % (type(ex).__name__, ex))
            finally:
                s.rt.close()
    return finish()

class TempDir:
    """mkdtemp, removed on exit even when the runtime left mounts or busy files a moment."""

    def __init__(self, prefix):
        self.path = tempfile.mkdtemp(prefix=prefix)

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        # rm, not shutil.rmtree: a hook may have made dirs thousands deep inside a rootfs (the
        # over-long path case), past Python's recursion limit
        for _ in range(20):
            if subprocess.run(["rm", "-rf", "--one-file-system", self.path], capture_output=True).returncode == 0:
                return
            time.sleep(0.1)
        subprocess.run(["rm", "-rf", "--one-file-system", self.path], capture_output=True)
