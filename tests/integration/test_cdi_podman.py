#!/usr/bin/python3
"""podman 4.3 + runc (Debian 12) consume the specs `gpulet cdi generate` writes, on a fake node root
with real character device nodes (tests/lib/mkroot.sh, mknod), and run a busybox-static rootfs:

  * --device k8s.device-plugin.nvidia.com/gpu=<GPU UUID | MIG UUID | index | GPU:MIG | all> injects
    the device nodes (right major:minor), its DRM nodes, the MIG caps nodes, the control nodes, the spec env, the
    driver libraries, firmware and the persistenced socket, all visible inside the container;
  * what our validator rejects, podman rejects too: cdiVersion 0.6.0, an invalid device name, and
    one device defined in two files of one dir (each next to a good spec that keeps working).

podman 4.3 has no flag or containers.conf key for the spec dirs (engine.cdi_spec_dirs is not
decoded by 4.3), so each podman runs in a private mount namespace (unshare -m) where /etc and
/var/run get a throw-away overlay (so the cdi mount points can exist without creating them on the
host) and temp dirs are bind-mounted over /etc/cdi and /var/run/cdi: nothing on the host is read
from or written to those dirs. Podman's storage is a temp --root/--runroot with the vfs driver.
Flags from docs/reference/real-peers.md §D (runc, cgroupfs, ulimits below the hard limits).
"""
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from test_cdi_testlib import GPULET, check, finish, gpulet, load_fixture, mkroot
from test_cdi_testlib import generate as gpulet_generate

FIXTURE = "dgx-a100"
VENDOR = "k8s.device-plugin.nvidia.com"

def need(tool):
    if not shutil.which(tool):
        print(f"FAIL: {tool} not found; install it (it is in .ci/packages.txt)")
        sys.exit(1)


@contextlib.contextmanager
def podman_tmpdir(prefix):
    """A temp dir for podman's storage and the rootfs. After `podman run` returns for a container that
    failed to start, podman's cleanup may still write in the storage for a moment: removing the dir
    is retried instead of failing a test whose checks all passed."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        yield tmp
    finally:
        for _ in range(50):
            try:
                shutil.rmtree(tmp)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.2)
        shutil.rmtree(tmp, ignore_errors=True)


class Podman:
    def __init__(self, tmp):
        self.tmp = tmp
        self.etc = os.path.join(tmp, "etc-cdi")
        self.run_dir = os.path.join(tmp, "run-cdi")
        self.rootfs = os.path.join(tmp, "rootfs")
        os.makedirs(os.path.join(self.rootfs, "bin"))
        shutil.copy("/bin/busybox", os.path.join(self.rootfs, "bin/busybox"))
        for c in ("sh", "ls", "env", "cat", "stat", "test"):
            os.symlink("busybox", os.path.join(self.rootfs, "bin", c))

    def reset(self):
        for d in (self.etc, self.run_dir):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)

    def run(self, devices, script="env; ls -l /dev; ls -l /dev/nvidia-caps 2>/dev/null; true", command=None, env=()):
        """command: argv to run instead of `/bin/sh -c script`; env: NAME=VALUE strings for podman -e."""
        argv = ["podman", "--root", os.path.join(self.tmp, "storage"), "--runroot", os.path.join(self.tmp, "runroot"),
                "--storage-driver", "vfs", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "run", "--rm",
                "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096", "--network", "none"]
        for d in devices:
            argv += ["--device", d]
        for e in env:
            argv += ["-e", e]
        argv += ["--rootfs", self.rootfs] + (command or ["/bin/sh", "-c", script])
        # overlays first (mount points without touching the host), then our dirs over them
        ov = os.path.join(self.tmp, "overlay")
        script_ns = ["set -e"]
        for i, d in enumerate(("/etc", os.path.realpath("/var/run"))):
            up, work = os.path.join(ov, "u%d" % i), os.path.join(ov, "w%d" % i)
            os.makedirs(up, exist_ok=True)
            os.makedirs(work, exist_ok=True)
            script_ns.append(f"mount -t overlay overlay -o lowerdir={d},upperdir={up},workdir={work} {d}")
        script_ns += ["mkdir -p /etc/cdi /var/run/cdi", 'mount --bind "$1" /etc/cdi',
                      'mount --bind "$2" /var/run/cdi', "shift 2", 'exec "$@"']
        wrapper = "\n".join(script_ns)
        return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", wrapper, "sh", self.etc,
                               self.run_dir] + argv, capture_output=True, text=True, timeout=180)


def generate(root, out_dir, strategy):
    # driver root = the fake root as the host sees it (mkroot host_view), so the spec's host
    # paths point at its real device nodes; the hooks run, with this gpulet as their binary
    r = gpulet_generate(FIXTURE, root, ["--nvidia-cdi-hook-path", os.path.realpath(GPULET), "--driver-root", root,
                                        "--vendor", VENDOR, "--device-name-strategy",
                                        strategy, "--format", "json", "--output", out_dir + "/"])
    check(r.returncode == 0, f"generate {strategy}: {r.stderr.strip()}")
    return os.path.join(out_dir, VENDOR + "-gpu.json")


def validate(args):
    return gpulet(["cdi", "validate", "--json"] + args)


def node_line(out, name):
    """'c 195 6' for /dev/<name> in ls -l output, or None."""
    for line in out.splitlines():
        f = line.split()
        if f and f[-1] == name and line.startswith("c"):
            m = re.search(r"(\d+),\s*(\d+)", line)
            return "c %s %s" % m.groups()
    return None


def main():
    for tool in ("podman", "runc", "unshare"):
        need(tool)
    if not os.path.exists("/bin/busybox"):
        print("FAIL: /bin/busybox missing: install busybox-static")
        return 1
    fx = load_fixture(FIXTURE)
    gpu0, mig_gpu = fx["gpus"][0], fx["gpus"][6]
    mig0 = mig_gpu["mig"][0]["cis"][0]["uuid"]
    with podman_tmpdir("gpulet-cdi-podman.") as tmp:
        root = os.path.join(tmp, "node")
        mkroot(root, FIXTURE, host_view=True, options=["--drm"])
        check(os.path.exists(os.path.join(root, "dev/nvidia0")) and
              not os.path.isfile(os.path.join(root, "dev/nvidia0")), "mkroot made real device nodes")
        with open(os.path.join(root, "proc/driver/nvidia-caps/mig-minors")) as f:
            minors = dict(l.strip().rsplit(" ", 1) for l in f if " " in l)
        p = Podman(tmp)
        run_tests(p, root, fx, gpu0, mig_gpu, mig0, minors)
    return finish("podman 4.3 + runc injected every device kind and rejected what gpulet cdi validate rejects")


def run_tests(p, root, fx, gpu0, mig_gpu, mig0, minors):
    # --- uuid names, the plugin's default -------------------------------------------------------
    p.reset()
    spec_path = generate(root, p.run_dir, "uuid")
    v = validate(["--runtime", "podman-4.3", spec_path])
    check(v.returncode == 0, f"validate of the generated spec: {v.stdout}")
    script = ("env; ls -l /dev /dev/dri /dev/dri/by-path; ls /usr/lib/x86_64-linux-gnu /lib/firmware/nvidia/*; "
              "ls -l /run/nvidia-persistenced/socket; cat /usr/bin/nvidia-smi")
    r = p.run([f"{VENDOR}/gpu={gpu0['uuid']}"], script)
    check(r.returncode == 0, f"podman GPU uuid: rc {r.returncode} {r.stderr.strip()}")
    out = r.stdout
    check("NVIDIA_VISIBLE_DEVICES=void" in out, "env NVIDIA_VISIBLE_DEVICES=void inside")
    check(f"GPULET_CDI_SPEC={VENDOR}/gpu" in out, "spec marker env inside")
    check(node_line(out, "nvidia0") == "c 195 0", f"/dev/nvidia0 inside: {node_line(out, 'nvidia0')}")
    check(node_line(out, "nvidiactl") == "c 195 255", "/dev/nvidiactl inside")
    check(node_line(out, "nvidia-uvm") is not None, "/dev/nvidia-uvm inside")
    check(node_line(out, "nvidia1") is None, "only the requested GPU is inside")
    check(node_line(out, "card0") == "c 226 0" and node_line(out, "renderD128") == "c 226 128",
          "the GPU's DRM nodes inside")
    check(node_line(out, "card1") is None, "only the requested GPU's DRM nodes")
    # the device's create-symlinks hook (gpulet cdi-hook, run by runc) made udev's by-path links
    dom, rest = gpu0["pci_bus_id"].split(":", 1)
    busid = ("%04x:%s" % (int(dom, 16), rest)).lower()
    check(re.search(r"pci-%s-card -> \.\./card0$" % re.escape(busid), out, re.M) and
          re.search(r"pci-%s-render -> \.\./renderD128$" % re.escape(busid), out, re.M),
          f"the GPU's /dev/dri/by-path links inside: {out[out.find('by-path'):][:300]}")
    for lib in ("libcuda.so.1", "libcuda.so." + fx["driver_version"], "libnvidia-ml.so.1"):
        check(re.search(r"^%s$" % re.escape(lib), out, re.M), f"{lib} mounted inside")
    check("gsp_ga10x.bin" in out, "GSP firmware inside")
    check(re.search(r"^s.*socket$", out, re.M), "persistenced socket inside")
    check("fake driver utility" in out, "nvidia-smi mounted inside")

    r = p.run([f"{VENDOR}/gpu={mig0}"])
    check(r.returncode == 0, f"podman MIG uuid: rc {r.returncode} {r.stderr.strip()}")
    gi, ci = mig_gpu["mig"][0]["gi"], mig_gpu["mig"][0]["cis"][0]["ci"]
    for key in (f"gpu{mig_gpu['minor']}/gi{gi}/access", f"gpu{mig_gpu['minor']}/gi{gi}/ci{ci}/access"):
        name = "nvidia-cap" + minors[key]
        check(node_line(r.stdout, name) is not None, f"MIG: /dev/nvidia-caps/{name} inside")
    check(node_line(r.stdout, "nvidia%d" % mig_gpu["minor"]) is not None, "MIG: parent GPU node inside")

    r = p.run([f"{VENDOR}/gpu=all"])
    check(r.returncode == 0, f"podman all: rc {r.returncode} {r.stderr.strip()}")
    for g in fx["gpus"]:
        check(node_line(r.stdout, "nvidia%d" % g["minor"]) is not None, f"all: /dev/nvidia{g['minor']} inside")

    r = p.run([f"{VENDOR}/gpu=GPU-00000000-0000-0000-0000-000000000000"])
    check(r.returncode != 0 and "unresolvable" in r.stderr, "an unknown device is unresolvable (control)")

    # --- index names --------------------------------------------------------------------------
    p.reset()
    generate(root, p.run_dir, "index")
    r = p.run([f"{VENDOR}/gpu=1", f"{VENDOR}/gpu=6:0"])
    check(r.returncode == 0, f"podman index names: rc {r.returncode} {r.stderr.strip()}")
    check(node_line(r.stdout, "nvidia1") == "c 195 1", "index 1 → /dev/nvidia1")
    check(node_line(r.stdout, "nvidia6") == "c 195 6", "6:0 → /dev/nvidia6")

    # --- what validate rejects, podman rejects ------------------------------------------------
    for case, mutate, code in (
        ("cdiVersion 0.6.0", lambda s: s.update(cdiVersion="0.6.0"), "version-too-new"),
        ("invalid device name", lambda s: s["devices"][0].update(name="b c"), "invalid-device-name"),
    ):
        p.reset()
        good = generate(root, p.run_dir, "uuid")
        spec = json.load(open(good))
        os.unlink(good)
        mutate(spec)
        bad = os.path.join(p.run_dir, "bad.json")
        json.dump(spec, open(bad, "w"))
        v = validate(["--runtime", "podman-4.3", bad])
        codes = [x["code"] for x in json.loads(v.stdout)["problems"]]
        check(v.returncode == 1 and code in codes, f"{case}: validate says {codes}")
        r = p.run([f"{VENDOR}/gpu={gpu0['uuid']}"])
        check(r.returncode != 0 and "unresolvable" in r.stderr, f"{case}: podman rejects it: rc {r.returncode} "
                                                                 f"{r.stderr.strip()}")

    # one device in two files of the same dir: both validate and podman drop it; another works
    p.reset()
    good = generate(root, p.run_dir, "uuid")
    spec = json.load(open(good))
    spec["devices"] = [d for d in spec["devices"] if d["name"] == gpu0["uuid"]]
    spec["containerEdits"]["env"] = [e for e in spec["containerEdits"]["env"] if not e.startswith("GPULET_")]
    json.dump(spec, open(os.path.join(p.run_dir, "other.json"), "w"))
    v = validate(["--dir", p.run_dir, "--runtime", "podman-4.3"])
    problems = json.loads(v.stdout)["problems"]
    check(v.returncode == 1 and sum(x["code"] == "duplicate-device" for x in problems) == 2,
          f"duplicate: validate says {[x['code'] for x in problems]}")
    r = p.run([f"{VENDOR}/gpu={gpu0['uuid']}"])
    check(r.returncode != 0 and "unresolvable" in r.stderr, f"duplicate: podman drops it: {r.stderr.strip()}")
    r = p.run([f"{VENDOR}/gpu={fx['gpus'][1]['uuid']}"])
    check(r.returncode == 0, f"duplicate: the other devices still work: {r.stderr.strip()}")

    # /var/run/cdi wins over /etc/cdi: validate warns, podman uses the /var/run/cdi one
    p.reset()
    generate(root, p.run_dir, "uuid")
    spec["containerEdits"]["env"] = ["FROM_ETC=1"]
    json.dump(spec, open(os.path.join(p.etc, "etc.json"), "w"))
    v = validate(["--dir", p.etc, "--dir", p.run_dir, "--runtime", "podman-4.3"])
    codes = [x["code"] for x in json.loads(v.stdout)["problems"]]
    check(v.returncode == 0 and codes == ["shadowed-device"], f"shadowed: validate says {codes}")
    r = p.run([f"{VENDOR}/gpu={gpu0['uuid']}"])
    check(r.returncode == 0 and "FROM_ETC" not in r.stdout and "GPULET_CDI_SPEC" in r.stdout,
          "shadowed: podman used the /var/run/cdi definition")


if __name__ == "__main__":
    sys.exit(main())
