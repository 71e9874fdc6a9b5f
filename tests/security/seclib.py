#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Shared parts of the security suite (not a test itself): a host canary tree and its fingerprint,
a fake node root and the CDI spec `gpulet cdi generate` writes for it, OCI bundles run by real runc
with their own state dir, and the pass/fail bookkeeping.

Everything lives under one temp dir per test run; runc containers and state are removed even when a
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
    """Exit 77 only where no runc container can run here at all (not root, no runc, no busybox)."""
    if os.geteuid() != 0:
        skip("runc needs root here (mount, mknod, chroot)")
    for tool in ("runc", "ldconfig"):
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
def node_spec(tmp, *extra):
    """A fake node root (tests/lib/mkroot.sh) and the spec `gpulet cdi generate` writes for it, hooks
    by the generator's default binary: returns the spec-level containerEdits (mounts, hooks)."""
    node = os.path.join(tmp, "node")
    if not os.path.isdir(node):
        sh(["sh", os.path.join(SRC, "tests/lib/mkroot.sh"), node, FIXTURE], env=dict(os.environ, GPULET_BUILD=BUILD))
    out = tempfile.mkdtemp(prefix="spec-", dir=tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPULET_", "NVIDIA_"))}
    sh([GPULET, "cdi", "generate", "--nvml-library", FAKE_NVML_LIB, "--driver-root", node, "--dev-root", node,
        "--format", "json", "--output", out + "/"] + list(extra), env=dict(env, FAKE_NVML_FIXTURE=FIXTURE))
    with open(os.path.join(out, "nvidia.com-gpu.json")) as f:
        return json.load(f)["containerEdits"]


def hook_by_action(edits, action):
    """The spec's hook running ACTION, and the argv prefix up to and including ACTION."""
    for h in edits["hooks"]:
        if action in h["args"]:
            return h, h["args"][:h["args"].index(action) + 1]
    raise RuntimeError("no %s hook in the spec: %s" % (action, edits["hooks"]))


def run_hook(edits, action, args, stdin, timeout=30, env=None):
    """Run the spec's hook binary for ACTION directly (not through runc) with crafted OCI state."""
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
            sh(["runc", "spec"], cwd=d)
            with open(os.path.join(d, "config.json")) as f:
                _base_config = json.load(f)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return json.loads(json.dumps(_base_config))


def write_bundle(bundle, rootfs, hooks, mounts=(), script="echo STARTED", env=None):
    """config.json of runc's default spec: the rootfs, the CDI hooks as createContainer hooks (path,
    args, env, timeout as the spec says) and the spec's mounts as bind mounts."""
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


class Runc:
    """Real runc with its own --root state dir; every container it ran is deleted on close()."""

    def __init__(self, tmp):
        self.state = os.path.join(tmp, "runc-state")
        os.makedirs(self.state, exist_ok=True)
        self.n = 0

    def run(self, bundle, timeout=30, on_timeout=None):
        """runc run; returns (rc, stdout, stderr, seconds); rc None when it ran past timeout (then
        on_timeout() is called to unblock it, runc and its children are killed)."""
        self.n += 1
        cid = "gpulet-sec-%d-%d" % (os.getpid(), self.n)
        t0 = time.monotonic()
        p = subprocess.Popen(["runc", "--root", self.state, "run", "--bundle", bundle, cid], stdin=subprocess.DEVNULL,
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
        except BaseException:  # interrupted (SIGTERM, ^C): runc and its children go too
            self.kill_group(p)
            p.wait()
            raise
        finally:
            self.delete(cid)
        return rc, out, err, time.monotonic() - t0

    @staticmethod
    def kill_group(p):
        """SIGKILL runc and every process below it: runc init leaves runc's process group, and
        killing it (pid 1 of the container's pid namespace) ends the hooks and their children."""
        tree = descendants(p.pid)
        for pid in [p.pid] + tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def delete(self, cid):
        subprocess.run(["runc", "--root", self.state, "kill", cid, "KILL"], capture_output=True)
        subprocess.run(["runc", "--root", self.state, "delete", "--force", cid], capture_output=True)
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
        p = subprocess.run(["runc", "--root", self.state, "list", "-q"], capture_output=True, text=True)
        for cid in p.stdout.split():
            self.delete(cid)


def one_line_error(err, prefix="gpulet cdi-hook"):
    """The hook's message as runc shows it: the first line naming the hook, or ''."""
    for line in err.replace("\\n", "\n").splitlines():
        if prefix in line:
            return line[line.index(prefix):]
    return ""


def ldconfig_cache(path):
    """glibc's own reading of a cache file (ldconfig -p -C): the library paths it lists."""
    p = subprocess.run(["ldconfig", "-p", "-C", path], capture_output=True, text=True)
    return [ln.rsplit("=> ", 1)[1].strip() for ln in p.stdout.splitlines() if "=> " in ln]


class TempDir:
    """mkdtemp, removed on exit even when runc left mounts or busy files a moment."""

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
