#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A hostile image against the jail update-ldcache runs the host's ldconfig in (src/cdihook/isolate.c,
confine.c), the second pass (docs/reference/cdi-hook.md §6). As test_hook_attacks.py: the hooks
exactly as `gpulet cdi generate` writes them, a real runtime (GPULET_SEC_RUNTIME: runc or crun), a host
canary tree that must stay unchanged.

  procfs    a procfs other than the rootfs's own /proc: a pod's read-only hostPath of the host's /proc
            at /host/proc, and a second procfs of the host's pid namespace (a container without a pid
            namespace, procfs mounted at /p2). ld.so.conf.d lines and SONAMEs lead through
            <procfs>/<pid>/root into the host's tree of a process that runs as uid 0 with no
            capabilities (as the chart's pods do); the container still starts with its cache built
  handles   a stand-in ldconfig (handle_probe.c) with file handles of host files outside the
            container: read one through a read-only library bind mount, create a file in a host dir
            through a read-write file bind mount (kubelet's /etc/hosts), name_to_handle_at itself
  limits    what the stand-in (probe.c) runs with: finite memory, file size and open-file limits, no
            core, and only CAP_DAC_OVERRIDE and CAP_FOWNER; the real ldconfig over
            /etc/ld.so.conf -> /dev/zero ends long before the time bound, and its peak memory (the hook
            run directly under maxrss.c) stays under the jail's RLIMIT_DATA; with REALDRIVER set, the
            peak over NVIDIA's real 535 files is printed

usage: test_jail_attacks.py GROUP...  (no argument = all). Exit 77 (CTest skip) only without root, the
runtime or busybox; everything else that goes wrong fails.
"""
import ctypes
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seclib  # noqa: E402
from seclib import LIBCUDA, LIBDIR, case, compile_c, hooks_with  # noqa: E402
from test_hook_attacks import LDCONFIG_TIMEOUT_ENV, escape_image  # noqa: E402

MIB = 1 << 20


# ---- procfs other than the rootfs's own /proc -------------------------------------------------
def capless_victim():
    """A host process as the chart's plugin, exporter and doctor run: uid 0, no capability (an empty
    bounding set, so its exec keeps none). Returns the Popen once its exec is done."""
    p = subprocess.Popen(["setpriv", "--bounding-set=-all", "--inh-caps=-all", "sleep", "600"])
    for _ in range(3000):  # at most 30 s on a loaded machine; usually the first look
        try:
            with open("/proc/%d/status" % p.pid) as f:
                status = f.read()
            if re.search(r"^Name:\s+sleep$", status, re.M) and re.search(r"^CapEff:\s+0+$", status, re.M):
                return p
        except OSError:
            pass
        time.sleep(0.01)
    p.kill()
    raise RuntimeError("setpriv --bounding-set=-all sleep: no capless sleep appeared")


def host_proc_hostpath(c, canary):
    """The node-exporter pattern: the host's /proc read-only at /host/proc."""
    c["mounts"].append({"destination": "/host/proc", "type": "bind", "source": "/proc",
                        "options": ["rbind", "ro", "nosuid", "nodev", "noexec"]})


def host_pid_second_procfs(c, canary):
    """No pid namespace (the runtime's, as hostPID), and a second procfs at /p2: both the host's."""
    c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "pid"]
    c["mounts"].append({"destination": "/p2", "type": "proc", "source": "proc", "options": ["nosuid", "nodev"]})


def group_procfs(s):
    victim = capless_victim()
    try:
        for name, tweak, prefixes in (
                ("host-proc-hostpath", host_proc_hostpath, ["/host/proc/%d/root" % victim.pid]),
                ("host-pid-second-procfs", host_pid_second_procfs,
                 ["/p2/%d/root" % victim.pid, "/proc/%d/root" % victim.pid])):
            r = s.container("procfs." + name, escape_image(prefixes), tweak=tweak)
            r["canary"].check(r["name"])
            s.started(r)
            s.cache_has_spec_libs(r)
    finally:
        victim.kill()
        victim.wait()


# ---- file handles ---------------------------------------------------------------------------------
def file_handle(path):
    """name_to_handle_at(path): struct file_handle as the kernel wrote it (what open_by_handle_at takes)."""
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(8 + 128)
    struct.pack_into("I", buf, 0, 128)
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(-100, path.encode(), buf, ctypes.byref(mount_id), 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "name_to_handle_at: %s" % os.strerror(e), path)
    return buf.raw[:8 + struct.unpack_from("I", buf, 0)[0]]


def probe_out(r):
    path = os.path.join(r["rootfs"], "probe.out")
    if not os.path.exists(path):
        return {}
    with open(path, errors="replace") as f:
        return dict(ln.split("=", 1) for ln in f.read().splitlines() if "=" in ln)


def group_handles(s):
    # the read-only mount the stand-in goes through: a driver library the spec mounts
    ro = next(m["containerPath"] for m in s.edits["mounts"] if re.search(r"/libcuda\.so\.\d+\.", m["containerPath"]))
    probe = compile_c("handle_probe.c", os.path.join(s.tmp, "handle-ldconfig"), "-static",
                      defines={"MOUNT_RO": ro, "MOUNT_RW": "/etc/hosts"})
    hosts = {}

    def image(rootfs, canary):
        os.makedirs(os.path.join(rootfs, "handles"))
        for name, path in (("secret", canary + "/a.txt"), ("dir", canary)):
            with open(os.path.join(rootfs, "handles", name), "wb") as f:
                f.write(file_handle(path))
        hosts["file"] = os.path.join(os.path.dirname(canary), "hosts")
        with open(hosts["file"], "w") as f:
            f.write("127.0.0.1 localhost\n")

    def tweak(c, canary):
        c["mounts"].append({"destination": "/etc/hosts", "type": "bind", "source": hosts["file"],
                            "options": ["rbind", "rw"]})

    r = s.container("handles.open-by-handle", image, edits=lambda c: seclib.node_spec(s.tmp, "--ldconfig-path", probe),
                    tweak=tweak)
    r["canary"].check(r["name"])
    s.started(r)
    got = probe_out(r)
    print("  [handles] the stand-in saw: %s" % got)
    if not case(r["name"] + ".probe-ran", got, "no /probe.out: the hook did not run the stand-in"):
        return
    case(r["name"] + ".host-file-not-read", got.get("secret", "").isdigit(),
         "read the host's %s/a.txt through the read-only mount %s: %r" % (r["canary"].path, ro, got.get("secret")))
    case(r["name"] + ".host-file-not-created", got.get("create", "0") != "0",
         "created a file in the host's %s through /etc/hosts" % r["canary"].path)
    case(r["name"] + ".name-to-handle-refused", got.get("name_to_handle") == str(1),
         "name_to_handle_at gave %s (want EPERM, 1)" % got.get("name_to_handle"))


# ---- limits -------------------------------------------------------------------------------------
def limits_of(got):
    """{"data": (soft, hard), ...} from the probe's limit.NAME=SOFT HARD lines (-1: unlimited)."""
    out = {}
    for k, v in got.items():
        if k.startswith("limit."):
            soft, hard = (int(x) for x in v.split())
            out[k[len("limit."):]] = (soft, hard)
    return out


def finite(lim, most):
    return lim and 0 <= lim[0] <= most and lim[0] == lim[1]


def devzero_image(rootfs, canary):
    """/etc/ld.so.conf is /dev/zero: a line that never ends (the runtime makes /dev/zero)."""
    os.unlink(os.path.join(rootfs, "etc/ld.so.conf"))
    os.symlink("/dev/zero", os.path.join(rootfs, "etc/ld.so.conf"))


def link_or_copy(src, dst):
    """A hard link where the two paths share a file system (the driver files are large), else a copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def hook_direct(s, name, rootfs, folders, timeout=25):
    """The spec's update-ldcache hook run directly over rootfs under maxrss: (status, peak KiB, stderr)."""
    if not hasattr(s, "maxrss"):
        s.maxrss = compile_c("maxrss.c", os.path.join(s.tmp, "maxrss"), "-static")
    bundle = os.path.join(os.path.dirname(rootfs), "bundle-" + name)
    os.makedirs(bundle)
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump({"ociVersion": "1.0.2", "root": {"path": rootfs}}, f)
    state = json.dumps({"ociVersion": "1.0.2", "id": name, "status": "creating", "pid": os.getpid(),
                        "bundle": bundle}).encode()
    h, prefix = seclib.hook_by_action(s.edits, "update-ldcache")
    args = [s.maxrss, h["path"]] + prefix[1:] + [a for f in folders for a in ("--folder", f)]
    t0 = time.monotonic()
    p = subprocess.run(args, input=state, capture_output=True, timeout=timeout + 15,
                       env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", LDCONFIG_TIMEOUT_ENV: str(timeout)})
    err = p.stderr.decode(errors="replace")
    m = re.search(r"status (\d+) maxrss_kib (\d+)", err)
    print("  [%s] hook rc %d in %.1fs: %s" % (name, p.returncode, time.monotonic() - t0, err.strip()[-400:]))
    return (p.returncode, int(m.group(2)) if m else None, err)


def group_limits(s):
    probe = {}

    def probe_spec(canary):
        probe["bin"] = compile_c("probe.c", os.path.join(os.path.dirname(canary), "probe"), "-static",
                                 defines={"CANARY": canary})
        return seclib.node_spec(s.tmp, "--ldconfig-path", probe["bin"])

    r = s.container("limits.probe", edits=probe_spec)
    r["canary"].check(r["name"])
    s.started(r)
    got = probe_out(r)
    lim = limits_of(got)
    print("  [limits.probe] limits %s, caps %s" % (lim, got.get("caps")))
    case("limits.data-bounded", finite(lim.get("data"), 1 << 30), "RLIMIT_DATA %s" % (lim.get("data"),))
    case("limits.as-bounded", finite(lim.get("as"), 64 << 30), "RLIMIT_AS %s" % (lim.get("as"),))
    case("limits.fsize-bounded", finite(lim.get("fsize"), 1 << 30), "RLIMIT_FSIZE %s" % (lim.get("fsize"),))
    case("limits.nofile-bounded", finite(lim.get("nofile"), 1024), "RLIMIT_NOFILE %s" % (lim.get("nofile"),))
    case("limits.no-core", lim.get("core") == (0, 0), "RLIMIT_CORE %s" % (lim.get("core"),))
    # CAP_DAC_OVERRIDE (1) and CAP_FOWNER (3): no CAP_DAC_READ_SEARCH (2), no CAP_CHOWN (0), nothing else
    case("limits.capabilities", got.get("caps") == hex(1 << 1 | 1 << 3),
         "effective capabilities %s, want 0xa (CAP_DAC_OVERRIDE, CAP_FOWNER)" % got.get("caps"))

    # the real ldconfig reading /dev/zero as ld.so.conf: it ends by its memory limit, not the time bound
    bound = 20
    r = s.container("limits.ld.so.conf-devzero", devzero_image, timeout=bound + 30,
                    hooks=hooks_with(s.edits, "update-ldcache", env=["%s=%d" % (LDCONFIG_TIMEOUT_ENV, bound)]))
    r["canary"].check(r["name"])
    case(r["name"] + ".ended-before-the-time-bound", r["rc"] is not None and "did not finish" not in r["err"],
         "%s rc %s after %.1fs: %r" % (s.rt.name, r["rc"], r["secs"], r["err"][-400:]))

    # its peak memory, the hook run directly (maxrss.c): under the jail's RLIMIT_DATA plus the binary
    rootfs = os.path.join(s.casedir("limits.devzero-peak"), "rootfs")
    seclib.busybox_rootfs(rootfs)
    devzero_image(rootfs, None)
    os.makedirs(os.path.join(rootfs, "dev"))
    os.mknod(os.path.join(rootfs, "dev/zero"), 0o666 | 0o020000, os.makedev(1, 5))
    rc, peak, err = hook_direct(s, "devzero", rootfs, ["/usr/lib"], timeout=bound)
    data = (lim.get("data") or (0, 0))[0]
    print("  [limits.devzero-peak] ldconfig over /etc/ld.so.conf -> /dev/zero: peak RSS %s KiB (RLIMIT_DATA %d "
          "MiB)" % (peak, data // MIB))
    case("limits.devzero-peak.under-rlimit-data", peak is not None and data > 0 and peak * 1024 <= data + 32 * MIB,
         "peak RSS %s KiB, RLIMIT_DATA %d: %s" % (peak, data, err[-300:]))
    case("limits.devzero-peak.not-the-time-bound", "did not finish" not in err, err[-300:])

    # NVIDIA's real files (REALDRIVER_ROOT_PLAIN from the realdriver fixture): works, and its figure
    plain = os.environ.get("REALDRIVER_ROOT_PLAIN")
    if plain:
        rootfs = os.path.join(s.casedir("limits.realdriver-peak"), "rootfs")
        shutil.copytree(plain, rootfs, symlinks=True, copy_function=link_or_copy)
        os.makedirs(os.path.join(rootfs, "etc/ld.so.conf.d"), exist_ok=True)
        with open(os.path.join(rootfs, "etc/ld.so.conf"), "w") as f:
            f.write("include /etc/ld.so.conf.d/*.conf\n")
        rc, peak, err = hook_direct(s, "realdriver", rootfs, [LIBDIR])
        libs = seclib.ldconfig_cache(os.path.join(rootfs, "etc/ld.so.cache"))
        print("  [limits.realdriver-peak] ldconfig over NVIDIA's 535 files (%d in the cache): peak RSS %s KiB" % (
            len(libs), peak))
        case("limits.realdriver-peak.cache-built", rc == 0 and LIBCUDA in libs,
             "rc %d, cache %s: %s" % (rc, libs[:6], err[-300:]))


GROUPS = {"procfs": group_procfs, "handles": group_handles, "limits": group_limits}


def main():
    return seclib.run_groups(GROUPS, "gpulet-jail")


if __name__ == "__main__":
    sys.exit(main())
