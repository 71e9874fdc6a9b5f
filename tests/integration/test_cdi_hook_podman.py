#!/usr/bin/python3
"""The CDI hooks make NVIDIA's real libcuda.so.1 loadable in a container whose library layout is not
the driver root's, judged by podman 4.3 + runc (the harness of test_cdi_podman.py: private mount
namespace, temp spec dirs, vfs storage, nothing on the host touched).

Driver: the real 535 user-space files of Debian's packages (tests/lib/realdriver.py), GPU from the
fake NVML (a T4 reporting that driver version), device nodes from a fake node root (mknod).
Container: a glibc rootfs built offline from this machine's Debian 12 libc6 files, plus /dlcuda,
a program compiled here that dlopen()s "libcuda.so.1" and calls cuDriverGetVersion.

  1. RHEL-style driver root (libraries in /usr/lib64) -> Debian container: its loader searches the
     multiarch dirs and its ld.so.cache knows nothing of /usr/lib64.
  2. Debian multiarch driver root (/usr/lib/x86_64-linux-gnu) -> a lib64 container (libc in
     /usr/lib64, ld.so.conf naming only /usr/lib64, no /etc/debian_version). A RHEL loader's built-in
     dirs are /lib64 and /usr/lib64; Debian's loader has the multiarch dirs built in, so its copy in
     this rootfs has them renamed (x86_64-linux-gnu -> x86_64-linux-rhl, same length): the loader
     then finds libraries in /usr/lib/x86_64-linux-gnu only through ld.so.cache, as RHEL's does.
     The hook binary is named nvidia-cdi-hook here (a symlink to gpulet): the spec's args say so.

Each: with the hooks dlopen succeeds (update-ldcache wrote the dir into the container's cache);
with --cdi-disable-hooks all it fails with "cannot open shared object file". Then a hook that fails
(an ldconfig that is a script) stops the container with gpulet's one-line message in podman's error.

Exit 77 (CTest skip) only where podman cannot run a container at all here (not root, no podman or
runc, or a plain container without CDI fails); every other problem fails the test.
"""
import json
import os
import re
import shutil
import subprocess
import sys

from test_cdi_podman import Podman, podman_tmpdir
from test_cdi_testlib import BUILD, FAKE, GPULET, SRC, check, finish, mkroot

ARCH = "x86_64-linux-gnu"
PROGRAM = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	int (*get_version)(int *);
	int v = 0, r;

	if (!h) {
		printf("DLOPEN FAILED: %s\n", dlerror());
		return 1;
	}
	get_version = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
	r = get_version ? get_version(&v) : -1;
	printf("DLOPEN OK cuDriverGetVersion=%d version=%d\n", r, v);
	return 0;
}
"""


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        print(f"FAIL: {' '.join(cmd)}: {p.stdout}{p.stderr}")
        sys.exit(1)
    return p.stdout


def libc_files():
    """(path, is_link) of the libc6 package's shared objects and loader, as installed here."""
    out = []
    for path in run(["dpkg", "-L", "libc6"]).split():
        if re.search(r"/lib(64)?/(%s/)?[^/]*(\.so[.0-9]*|ld-linux-x86-64\.so\.2)$" % ARCH, path) and \
                os.path.lexists(path) and not os.path.isdir(path):
            out.append(path)
    if not any(p.endswith("/libc.so.6") for p in out):
        print(f"FAIL: no libc.so.6 in dpkg -L libc6: {out}")
        sys.exit(1)
    return out


def base_rootfs(rootfs, program):
    os.makedirs(os.path.join(rootfs, "bin"))
    os.makedirs(os.path.join(rootfs, "etc/ld.so.conf.d"))
    shutil.copy("/bin/busybox", os.path.join(rootfs, "bin/busybox"))
    for c in ("sh", "cat", "ls"):
        os.symlink("busybox", os.path.join(rootfs, "bin", c))
    shutil.copy(program, os.path.join(rootfs, "dlcuda"))


def debian_rootfs(rootfs, program):
    """Debian's layout: merged /usr, libc in the multiarch dir, Debian's ld.so.conf, its cache."""
    base_rootfs(rootfs, program)
    os.makedirs(os.path.join(rootfs, "usr/lib", ARCH))
    os.makedirs(os.path.join(rootfs, "lib64"))
    os.symlink("usr/lib", os.path.join(rootfs, "lib"))
    for path in libc_files():
        dst = os.path.join(rootfs, path.lstrip("/"))
        if os.path.islink(path):
            os.symlink(os.readlink(path), dst)
        else:
            shutil.copy(path, dst)
    with open(os.path.join(rootfs, "etc/debian_version"), "w") as f:
        f.write("12.0\n")
    with open(os.path.join(rootfs, "etc/ld.so.conf"), "w") as f:
        f.write("include /etc/ld.so.conf.d/*.conf\n")
    with open(os.path.join(rootfs, "etc/ld.so.conf.d", ARCH + ".conf"), "w") as f:
        f.write(f"/usr/local/lib/{ARCH}\n/lib/{ARCH}\n/usr/lib/{ARCH}\n")
    run(["ldconfig", "-r", rootfs])


def lib64_rootfs(rootfs, program):
    """A lib64 layout: libc and the loader in /usr/lib64 only, ld.so.conf naming /usr/lib64, a loader
    without the multiarch dirs built in (see the module comment)."""
    base_rootfs(rootfs, program)
    lib64 = os.path.join(rootfs, "usr/lib64")
    os.makedirs(lib64)
    os.symlink("usr/lib64", os.path.join(rootfs, "lib64"))
    for path in libc_files():
        real = os.path.realpath(path)
        name = os.path.basename(path)
        if name.startswith("ld-linux"):
            with open(real, "rb") as f:
                data = f.read().replace(ARCH.encode(), b"x86_64-linux-rhl")
            with open(os.path.join(lib64, name), "wb") as f:
                f.write(data)
            os.chmod(os.path.join(lib64, name), 0o755)
        elif not os.path.lexists(os.path.join(lib64, name)):
            shutil.copy(real, os.path.join(lib64, name))
    with open(os.path.join(rootfs, "etc/ld.so.conf"), "w") as f:
        f.write("/usr/lib64\ninclude /etc/ld.so.conf.d/*.conf\n")
    run(["ldconfig", "-r", rootfs])


def lib64_driver_root(plain, dest):
    """The real driver's plain root with its libraries moved to /usr/lib64 (RHEL's layout) and an
    ld.so.cache of that. Hard links: files replaced here are unlinked first, never written through."""
    run(["cp", "-al", plain, dest])
    os.rename(os.path.join(dest, "usr/lib", ARCH), os.path.join(dest, "usr/lib64"))
    for rel in ("etc/ld.so.conf", f"etc/ld.so.conf.d/{ARCH}.conf", "etc/ld.so.cache"):
        if os.path.lexists(os.path.join(dest, rel)):
            os.unlink(os.path.join(dest, rel))
    with open(os.path.join(dest, "etc/ld.so.conf"), "w") as f:
        f.write("/usr/lib64\n")
    run(["ldconfig", "-r", dest])


def generate(fixture_file, driver_root, dev_root, out_dir, extra):
    env = {k: v for k, v in os.environ.items() if k not in ("GPULET_NVML_LIBRARY", "NVIDIA_DRIVER_ROOT")}
    p = subprocess.run([GPULET, "cdi", "generate", "--nvml-library", FAKE, "--driver-root", driver_root,
                        "--dev-root", dev_root, "--format", "json", "--output", out_dir + "/"] + extra,
                       capture_output=True, text=True, env=dict(env, FAKE_NVML_FIXTURE=fixture_file), timeout=60)
    check(p.returncode == 0, f"generate {extra}: {p.stderr.strip()}")
    with open(os.path.join(out_dir, "nvidia.com-gpu.json")) as f:
        return json.load(f)


class HookPodman(Podman):
    """test_cdi_podman's runner on a fresh copy of a template rootfs per run (the hooks write into it)."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.etc = os.path.join(tmp, "etc-cdi")
        self.run_dir = os.path.join(tmp, "run-cdi")
        self.rootfs = None

    def run_in(self, template, devices, script):
        self.rootfs = os.path.join(self.tmp, "rootfs-run")
        shutil.rmtree(self.rootfs, ignore_errors=True)
        run(["cp", "-a", template, self.rootfs])
        return self.run(devices, script)


def hook_args(spec):
    return [h["args"] for h in spec["containerEdits"].get("hooks", [])]


def direction(p, name, template, fixture_file, driver_root, dev_root, hook_path, libdir):
    """With hooks dlopen works, without it fails; the spec says why."""
    script = "/dlcuda; echo; cat /etc/ld.so.conf.d/*nvcr* 2>/dev/null; true"
    p.reset()
    spec = generate(fixture_file, driver_root, dev_root, p.run_dir,
                    ["--nvidia-cdi-hook-path", hook_path] if hook_path else [])
    mounts = [m["containerPath"] for m in spec["containerEdits"].get("mounts", [])]
    check(f"{libdir}/libcuda.so.1" in mounts, f"{name}: libcuda.so.1 mounted at {libdir}: {mounts[:6]}")
    ldcache = [a for a in hook_args(spec) if "update-ldcache" in a]
    check(len(ldcache) == 1 and libdir in ldcache[0], f"{name}: update-ldcache --folder {libdir}: {ldcache}")
    if hook_path:
        check(all(a[0] == "nvidia-cdi-hook" and a[1] != "cdi-hook" for a in hook_args(spec)),
              f"{name}: a binary named nvidia-cdi-hook gets nvidia-cdi-hook's args: {hook_args(spec)}")
    # every link of create-symlinks is there, pointing where the spec says (gbm/ made on the way)
    links = [a.split("::") for h in hook_args(spec) if "create-symlinks" in h for a in h if "::" in a]
    check(any(lk.endswith("/gbm/nvidia-drm_gbm.so") for _, lk in links), f"{name}: the GBM backend link: {links}")
    r = p.run_in(template, ["nvidia.com/gpu=0"], script + "; ls -l " + " ".join(lk for _, lk in links))
    print(f"--- {name}, with hooks: rc {r.returncode}\n{r.stdout}{r.stderr[-2000:]}")
    check(r.returncode == 0 and "DLOPEN OK" in r.stdout, f"{name}: dlopen succeeds with the hooks")
    for target, lk in links:
        check(f"{lk} -> {target}" in r.stdout, f"{name}: {lk} -> {target} in the container")
    check("version=12020" in r.stdout, f"{name}: the real libcuda answers cuDriverGetVersion (12.2 for 535)")
    check(libdir in r.stdout, f"{name}: the hook's drop-in names {libdir}")

    p.reset()
    spec = generate(fixture_file, driver_root, dev_root, p.run_dir, ["--cdi-disable-hooks", "all"])
    check("hooks" not in spec["containerEdits"], f"{name}: --cdi-disable-hooks all leaves no hooks")
    r = p.run_in(template, ["nvidia.com/gpu=0"], script)
    print(f"--- {name}, --cdi-disable-hooks all: rc {r.returncode}\n{r.stdout}{r.stderr[-2000:]}")
    check(r.returncode == 0 and "DLOPEN FAILED" in r.stdout and
          "libcuda.so.1: cannot open shared object file" in r.stdout,
          f"{name}: without the hooks dlopen fails (cannot open shared object file)")
    return spec


def failing_hook(p, template, fixture_file, driver_root, dev_root, tmp):
    """A hook that fails stops the container, and podman shows the hook's one line."""
    script = os.path.join(tmp, "ldconfig-script")
    with open(script, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(script, 0o755)
    p.reset()
    spec_file = os.path.join(p.run_dir, "nvidia.com-gpu.json")
    spec = generate(fixture_file, driver_root, dev_root, p.run_dir, [])
    for h in spec["containerEdits"]["hooks"]:
        if "update-ldcache" in h["args"]:
            h["args"] += ["--ldconfig-path", script]
    with open(spec_file, "w") as f:
        json.dump(spec, f)
    r = p.run_in(template, ["nvidia.com/gpu=0"], "/dlcuda")
    print(f"--- failing hook: rc {r.returncode}\n{r.stderr[-1500:]}")
    check(r.returncode != 0 and "gpulet cdi-hook update-ldcache:" in r.stderr and "is a script" in r.stderr,
          "a failing hook stops the container; podman shows what, where and what to do")


def preflight(tmp):
    if os.geteuid() != 0:
        skip("rootful podman is needed (mknod, unshare -m); run as root")
    for tool in ("podman", "runc", "unshare", "ldconfig", "dpkg"):
        if not shutil.which(tool):
            skip(f"{tool} not found")
    if not os.path.exists("/bin/busybox"):
        skip("/bin/busybox missing (busybox-static)")
    p = HookPodman(tmp)
    p.reset()
    control = os.path.join(tmp, "control")
    base_rootfs(control, "/bin/busybox")
    r = p.run_in(control, [], "true")
    if r.returncode != 0:
        skip(f"podman cannot run a plain container here: {r.stderr.strip()[-500:]}")
    return p


def main():
    facts = dict(line.split("=", 1) for line in run(
        ["/usr/bin/python3", os.path.join(SRC, "tests/lib/realdriver.py"), "env",
         os.path.join(BUILD, "realdriver")]).split())
    version, plain = facts["REALDRIVER_VERSION"], facts["REALDRIVER_ROOT_PLAIN"]
    with podman_tmpdir("gpulet-cdi-hook.") as tmp:
        p = preflight(tmp)
        with open(os.path.join(SRC, "tests/fixtures/single-t4.json")) as f:
            fixture = json.load(f)
        fixture["driver_version"], fixture["nvml_version"] = version, "12." + version
        fixture_file = os.path.join(tmp, "t4-real.json")
        with open(fixture_file, "w") as f:
            json.dump(fixture, f)
        dev_root = os.path.join(tmp, "node")
        mkroot(dev_root, fixture_file)
        src = os.path.join(tmp, "dlcuda.c")
        with open(src, "w") as f:
            f.write(PROGRAM)
        program = os.path.join(tmp, "dlcuda")
        run([os.environ.get("CC", "cc"), "-O1", "-o", program, src])
        debian, lib64 = os.path.join(tmp, "rootfs-debian"), os.path.join(tmp, "rootfs-lib64")
        debian_rootfs(debian, program)
        lib64_rootfs(lib64, program)
        rhel_driver = os.path.join(tmp, "driver-lib64")
        lib64_driver_root(plain, rhel_driver)
        bindir = os.path.join(tmp, "bin")
        os.makedirs(bindir)
        os.symlink(os.path.realpath(GPULET), os.path.join(bindir, "nvidia-cdi-hook"))

        direction(p, "/usr/lib64 driver -> Debian container", debian, fixture_file, rhel_driver, dev_root, None,
                  "/usr/lib64")
        direction(p, "multiarch driver -> lib64 container", lib64, fixture_file, plain, dev_root,
                  os.path.join(bindir, "nvidia-cdi-hook"), "/usr/lib/" + ARCH)
        failing_hook(p, debian, fixture_file, rhel_driver, dev_root, tmp)
    return finish("podman + runc: the hooks make the real libcuda.so.1 loadable across library layouts, both ways")


if __name__ == "__main__":
    sys.exit(main())
