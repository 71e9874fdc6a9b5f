#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Build a fake NVIDIA node root from a fake-NVML fixture (called through tests/lib/mkroot.sh).

What a driver install leaves on a node, as far as gpulet looks (facts from docs/reference/cdi.md
§7.3-7.5 and device-plugin.md §6): device nodes, /proc/driver/nvidia/version, the nvidia-caps
mig-minors table, sysfs numa_node, the driver libraries with their SONAME symlink chains and a real
ld.so.cache made by ldconfig, GSP firmware, utility binaries and the IPC sockets.
"""
import argparse, json, os, shlex, shutil, socket, stat, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
LIBDIR = "usr/lib/x86_64-linux-gnu"

# Driver libraries: (name, SONAME, dev symlink?). SONAME "V" = the full driver version.
# Names from libnvidia-container nvc_info.c's lists (utility, compute, video, graphics) as
# docs/reference/cdi.md §7.4 quotes them; SONAMEs as the 550 driver ships them.
LIBS = [
    ("libnvidia-ml", "libnvidia-ml.so.1", True),
    ("libnvidia-cfg", "libnvidia-cfg.so.1", True),
    ("libcuda", "libcuda.so.1", True),
    ("libcudadebugger", "libcudadebugger.so.1", False),
    ("libnvidia-opencl", "libnvidia-opencl.so.1", False),
    ("libnvidia-gpucomp", "V", False),
    ("libnvidia-ptxjitcompiler", "libnvidia-ptxjitcompiler.so.1", True),
    ("libnvidia-allocator", "libnvidia-allocator.so.1", True),
    ("libnvidia-nvvm", "libnvidia-nvvm.so.4", True),
    ("libnvidia-pkcs11", "V", False),
    ("libnvidia-pkcs11-openssl3", "V", False),
    ("libnvidia-encode", "libnvidia-encode.so.1", True),
    ("libnvidia-opticalflow", "libnvidia-opticalflow.so.1", True),
    ("libnvcuvid", "libnvcuvid.so.1", True),
    ("libnvidia-eglcore", "V", False),
    ("libnvidia-glcore", "V", False),
    ("libnvidia-tls", "V", False),
    ("libnvidia-glsi", "V", False),
    ("libnvidia-fbc", "libnvidia-fbc.so.1", True),
    ("libnvidia-rtcore", "V", False),
    ("libnvoptix", "libnvoptix.so.1", False),
    ("libGLX_nvidia", "libGLX_nvidia.so.0", False),
    ("libEGL_nvidia", "libEGL_nvidia.so.0", False),
    ("libGLESv2_nvidia", "libGLESv2_nvidia.so.2", False),
    ("libGLESv1_CM_nvidia", "libGLESv1_CM_nvidia.so.1", False),
    ("libnvidia-glvkspirv", "V", False),
    ("libnvidia-ngx", "libnvidia-ngx.so.1", False),
]
VDPAU = ("libvdpau_nvidia", "libvdpau_nvidia.so.1")

# Character device majors. 195 is fixed for NVIDIA (libnvidia-container nvc_internal.h); the others
# are dynamic on a real node (read from /proc/devices), so any free numbers do.
MAJOR_NVIDIA, MAJOR_UVM, MAJOR_CAPS, MAJOR_NVSWITCH = 195, 511, 508, 509
MINOR_CTL, MINOR_MODESET = 255, 254
MAJOR_DRM = 226  # fixed in the kernel (include/uapi/drm/drm.h DRM_MAJOR)

# /proc/driver/nvidia-caps/mig-minors layout: config 1, monitor 2, then per GPU minor G (0..31)
# 15 GPU instances x (1 access + 8 compute instances).
MIG_GPUS, MIG_GIS, MIG_CIS = 32, 15, 8


def mig_minor(gpu, gi, ci=None):
    base = 3 + gpu * MIG_GIS * (MIG_CIS + 1) + gi * (MIG_CIS + 1)
    return base if ci is None else base + 1 + ci


def mig_minors_text():
    out = ["config 1", "monitor 2"]
    for g in range(MIG_GPUS):
        for i in range(MIG_GIS):
            out.append("gpu%d/gi%d/access %d" % (g, i, mig_minor(g, i)))
            for c in range(MIG_CIS):
                out.append("gpu%d/gi%d/ci%d/access %d" % (g, i, c, mig_minor(g, i, c)))
    return "\n".join(out) + "\n"


def die(msg):
    print("mkroot: " + msg, file=sys.stderr)
    sys.exit(1)


def put(dest, rel, text, mode=0o644):
    path = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.unlink(path)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def symlink(dest, rel, target):
    path = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.unlink(path)
    os.symlink(target, path)


def devnode(dest, rel, major, minor, mode, plain, gid=None):
    path = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.unlink(path)
    if plain:
        open(path, "w").close()
        os.chmod(path, mode)
    else:
        try:
            os.mknod(path, stat.S_IFCHR | mode, os.makedev(major, minor))
        except PermissionError:
            die("mknod %s: not permitted; run as root (CI does), or pass --plain-devnodes or --no-devnodes" % path)
        os.chmod(path, mode)  # mknod is subject to the umask
    if gid is not None:
        os.chown(path, 0, gid)


def lib_soname(soname, name, ver):
    return "%s.so.%s" % (name, ver) if soname == "V" else soname


def stub_cache(build, ver):
    """Tiny real ELF shared objects, one per library, compiled once per driver version."""
    cache = os.path.join(build, "mkroot-cache", ver)
    if os.path.exists(os.path.join(cache, ".done")):
        return cache
    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=os.path.dirname(cache))
    except OSError as e:
        die("cannot write the stub library cache in %s (%s); pass --build or GPULET_BUILD" % (cache, e.strerror))
    try:
        src = os.path.join(tmp, "stub.c")
        with open(src, "w") as f:
            f.write("/* gpulet test stub of an NVIDIA driver library */\n"
                    "int gpulet_fake_driver_library(void) { return 0; }\n")
        obj = os.path.join(tmp, "stub.o")
        subprocess.run(["cc", "-fPIC", "-c", "-o", obj, src], check=True)
        for name, soname, _ in LIBS + [VDPAU + (False,)]:
            out = os.path.join(tmp, "%s.so.%s" % (name, ver))
            subprocess.run(["cc", "-shared", "-o", out, obj, "-Wl,-soname," + lib_soname(soname, name, ver)],
                           check=True)
        open(os.path.join(tmp, ".done"), "w").close()
        os.chmod(tmp, 0o755)  # mkdtemp made it 0700; other users' test runs read the cache too
        try:
            os.rename(tmp, cache)
        except OSError:  # another test built it at the same time
            if not os.path.exists(os.path.join(cache, ".done")):
                raise
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
    return cache


def copy_lib(src, dst):
    if os.path.lexists(dst):
        os.unlink(dst)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def install_libs(dest, cache, ver, fakenvml):
    libdir = os.path.join(dest, LIBDIR)
    os.makedirs(os.path.join(libdir, "vdpau"), exist_ok=True)
    for name, soname, dev in LIBS:
        real = "%s.so.%s" % (name, ver)
        copy_lib(os.path.join(cache, real), os.path.join(libdir, real))
        so = lib_soname(soname, name, ver)
        if so != real:
            symlink(dest, os.path.join(LIBDIR, so), real)
        if dev:
            symlink(dest, os.path.join(LIBDIR, name + ".so"), so)
    real = "%s.so.%s" % (VDPAU[0], ver)
    copy_lib(os.path.join(cache, real), os.path.join(libdir, "vdpau", real))
    symlink(dest, os.path.join(LIBDIR, "vdpau", VDPAU[1]), real)
    if fakenvml:
        # The fake NVML as the driver's libnvidia-ml, for tests of the driver-root search.
        dst = os.path.join(libdir, "libnvidia-ml.so." + ver)
        os.unlink(dst)
        shutil.copy2(fakenvml, dst)
    put(dest, "etc/ld.so.conf", "/" + LIBDIR + "\n")
    os.makedirs(os.path.join(dest, "var/cache/ldconfig"), exist_ok=True)
    # -X: keep our symlinks exactly as a driver installer makes them; only write the cache.
    r = subprocess.run(["ldconfig", "-X", "-r", dest], capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(os.path.join(dest, "etc/ld.so.cache")):
        die("ldconfig -r %s failed: %s" % (dest, r.stderr.strip()))


def bind_socket(dest, rel):
    path = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    cwd = os.open(".", os.O_RDONLY)
    try:
        os.chdir(os.path.dirname(path))  # sun_path is 108 bytes; DEST may be longer
        s.bind(os.path.basename(path))
    finally:
        os.fchdir(cwd)
        os.close(cwd)
        s.close()  # the socket file stays, like a daemon's that nobody talks to in tests


def pci_sysfs(bus_id):
    """NVML "00000000:07:00.0" -> sysfs "0000:07:00.0" (lowercase)."""
    dom, rest = bus_id.split(":", 1)
    return ("%04x:%s" % (int(dom, 16), rest)).lower()


def mig_instances(gpu):
    for gi in gpu.get("mig") or []:
        for ci in gi.get("cis") or []:
            yield gi.get("gi", 0), ci.get("ci", 0)


def main():
    ap = argparse.ArgumentParser(prog="mkroot.sh", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="example: tests/lib/mkroot.sh /tmp/node dgx-a100")
    ap.add_argument("dest")
    ap.add_argument("fixture", help="fixture name (tests/fixtures/[extra/]NAME.json) or path")
    ap.add_argument("--no-devnodes", action="store_true", help="create no /dev entries at all")
    ap.add_argument("--plain-devnodes", action="store_true",
                    help="regular files instead of character devices (when mknod is not allowed)")
    ap.add_argument("--all-caps", action="store_true",
                    help="create every /dev/nvidia-caps node of mig-minors, not only the fixture's MIG instances")
    ap.add_argument("--no-sockets", action="store_true", help="no IPC sockets under run/")
    ap.add_argument("--drm", action="store_true",
                    help="DRM nodes per GPU: dev/dri/card<N>, renderD<128+N>, by-path links, sysfs drm/ entries")
    ap.add_argument("--mps", action="store_true", help="an MPS control daemon's pipe dir tmp/nvidia-mps with its socket")
    ap.add_argument("--dev-mode", default="0666", help="mode of the /dev/nvidia* nodes (default 0666; e.g. 0660)")
    ap.add_argument("--dev-gid", type=int, default=None, help="group of the /dev/nvidia* nodes (default: root)")
    ap.add_argument("--kernel-version", default=None,
                    help="kernel module version for proc/ and sys/ when it should differ from the libraries "
                         "(a driver upgraded without reboot)")
    ap.add_argument("--with-fakenvml", action="store_true",
                    help="install build/fakenvml/libnvidia-ml.so.1 as the driver's libnvidia-ml")
    ap.add_argument("--proc", action="append", default=[], metavar="PID=ARGV",
                    help="a process: proc/PID/comm (argv[0]'s name) and proc/PID/cmdline (ARGV split like a "
                         "shell, NUL-separated), e.g. '4242=/usr/bin/kubelet --root-dir=/data/kubelet'")
    ap.add_argument("--kubeadm-unit", action="store_true",
                    help="kubelet as the kubeadm packages install it: usr/lib/systemd/system/kubelet.service, "
                         "its drop-in kubelet.service.d/10-kubeadm.conf and var/lib/kubelet/kubeadm-flags.env")
    ap.add_argument("--build", default=os.environ.get("GPULET_BUILD") or os.path.join(SRC, "build"),
                    help="build dir holding the stub library cache (default $GPULET_BUILD or ./build)")
    a = ap.parse_args()

    path = a.fixture
    for d in ("tests/fixtures", "tests/fixtures/extra"):
        if not os.path.exists(path):
            path = os.path.join(SRC, d, a.fixture + ".json")
    try:
        with open(path) as f:
            fx = json.load(f)
    except (OSError, ValueError) as e:
        die("cannot read fixture %s: %s" % (a.fixture, e))
    ver = fx.get("driver_version", "550.54.15")
    models = fx.get("models", {})
    gpus = [dict(models.get(g.get("model"), {}), **g) for g in fx.get("gpus", [])]
    dest = os.path.abspath(a.dest)
    os.makedirs(dest, exist_ok=True)

    fakenvml = None
    if a.with_fakenvml:
        fakenvml = os.path.join(a.build, "fakenvml/libnvidia-ml.so.1")
        if not os.path.exists(fakenvml):
            die("%s is missing: build it first (cmake --build %s --target fakenvml)" % (fakenvml, a.build))
    install_libs(dest, stub_cache(a.build, ver), ver, fakenvml)
    if fakenvml:
        # the fixture beside the fake, where it looks without FAKE_NVML_FIXTURE (a hook run with an
        # empty environment: gpulet-cdi-hook's hand-over to gpulet for apply-cuda-memory-limits)
        shutil.copy2(path, os.path.join(dest, LIBDIR, "fakenvml-fixture.json"))

    # /dev
    if not a.no_devnodes:
        plain, mode, gid = a.plain_devnodes, int(a.dev_mode, 8), a.dev_gid
        for g in gpus:
            devnode(dest, "dev/nvidia%d" % g["minor"], MAJOR_NVIDIA, g["minor"], mode, plain, gid)
        devnode(dest, "dev/nvidiactl", MAJOR_NVIDIA, MINOR_CTL, mode, plain, gid)
        devnode(dest, "dev/nvidia-modeset", MAJOR_NVIDIA, MINOR_MODESET, mode, plain, gid)
        devnode(dest, "dev/nvidia-uvm", MAJOR_UVM, 0, mode, plain, gid)
        devnode(dest, "dev/nvidia-uvm-tools", MAJOR_UVM, 1, mode, plain, gid)
        # the host path of the CDI spec's "void" mount (nvidia-ctk's /var/run/nvidia-container-devices/void)
        devnode(dest, "dev/null", 1, 3, 0o666, plain)
        if a.drm:
            # DRM nodes as nvidia-drm makes them (char major 226); sysfs drm/ names them per GPU.
            for n, g in enumerate(gpus):
                busid = pci_sysfs(g["pci_bus_id"])
                for node, minor in (("card%d" % n, n), ("renderD%d" % (128 + n), 128 + n)):
                    devnode(dest, "dev/dri/" + node, MAJOR_DRM, minor, mode, plain, gid)
                    os.makedirs(os.path.join(dest, "sys/bus/pci/devices", busid, "drm", node), exist_ok=True)
                symlink(dest, "dev/dri/by-path/pci-%s-card" % busid, "../card%d" % n)
                symlink(dest, "dev/dri/by-path/pci-%s-render" % busid, "../renderD%d" % (128 + n))
        caps = {1, 2} if any(g.get("mig") for g in gpus) else set()
        for g in gpus:
            for gi, ci in mig_instances(g):
                caps |= {mig_minor(g["minor"], gi), mig_minor(g["minor"], gi, ci)}
        if a.all_caps:
            caps = set(range(1, mig_minor(MIG_GPUS - 1, MIG_GIS - 1, MIG_CIS - 1) + 1))
        for m in sorted(caps):
            devnode(dest, "dev/nvidia-caps/nvidia-cap%d" % m, MAJOR_CAPS, m, 0o400, plain)
        if fx.get("nvswitches"):
            devnode(dest, "dev/nvidia-nvswitchctl", MAJOR_NVSWITCH, 255, 0o666, plain)
            for i in range(len(fx["nvswitches"])):
                devnode(dest, "dev/nvidia-nvswitch%d" % i, MAJOR_NVSWITCH, i, 0o666, plain)

    # /proc
    put(dest, "proc/devices",
        "Character devices:\n  1 mem\n  4 /dev/vc/0\n  5 /dev/tty\n%d nvidia-frontend\n%d nvidia-modeset\n"
        "%d nvidiactl\n%d nvidia\n%d nvidia-caps\n%d nvidia-nvswitch\n%d nvidia-uvm\n\nBlock devices:\n  7 loop\n"
        "259 blkext\n" % (MAJOR_NVIDIA, MAJOR_NVIDIA, MAJOR_NVIDIA, MAJOR_NVIDIA, MAJOR_CAPS, MAJOR_NVSWITCH,
                          MAJOR_UVM))
    kver = a.kernel_version or ver
    put(dest, "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Tue Mar  5 22:23:56 UTC 2024\n"
        "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n" % kver)
    put(dest, "proc/driver/nvidia/params", "ModifyDeviceFiles: 1\nDeviceFileUID: 0\nDeviceFileGID: 0\n"
        "DeviceFileMode: 438\n")
    put(dest, "proc/driver/nvidia-caps/mig-minors", mig_minors_text(), 0o444)
    cap_info = "DeviceFileMinor: %d\nDeviceFileMode: 256\nDeviceFileModify: 1\n"
    if any(g.get("mig") for g in gpus):
        put(dest, "proc/driver/nvidia/capabilities/mig/config", cap_info % 1, 0o444)
        put(dest, "proc/driver/nvidia/capabilities/mig/monitor", cap_info % 2, 0o444)
    for g in gpus:
        busid = pci_sysfs(g["pci_bus_id"])
        put(dest, "proc/driver/nvidia/gpus/%s/information" % busid,
            "Model: \t\t %s\nIRQ:   \t\t %d\nGPU UUID: \t %s\nVideo BIOS: \t 92.00.45.00.03\n"
            "Bus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\nBus Location: \t %s\n"
            "Device Minor: \t %d\nGPU Excluded:\t No\n" % (g.get("name", "NVIDIA GPU"), 100 + g["minor"], g["uuid"],
                                                         busid, g["minor"]), 0o444)
        for gi, ci in mig_instances(g):
            base = "proc/driver/nvidia/capabilities/gpu%d/mig/gi%d" % (g["minor"], gi)
            put(dest, base + "/access", cap_info % mig_minor(g["minor"], gi), 0o444)
            put(dest, base + "/ci%d/access" % ci, cap_info % mig_minor(g["minor"], gi, ci), 0o444)

    # /sys
    put(dest, "sys/module/nvidia/version", kver + "\n", 0o444)
    for g in gpus:
        d = "sys/bus/pci/devices/%s/" % pci_sysfs(g["pci_bus_id"])
        dev_id = int(str(g.get("pci_device_id", "0")), 0)
        put(dest, d + "numa_node", "%d\n" % g.get("numa_node", -1), 0o444)
        put(dest, d + "vendor", "0x%04x\n" % (dev_id & 0xffff), 0o444)
        put(dest, d + "device", "0x%04x\n" % (dev_id >> 16), 0o444)
        put(dest, d + "class", "0x030200\n", 0o444)

    # firmware, binaries, config files
    for fw in ("gsp_ga10x.bin", "gsp_tu10x.bin"):
        put(dest, "lib/firmware/nvidia/%s/%s" % (ver, fw), "fake GSP firmware %s\n" % ver)
    for b in ("nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
              "nvidia-cuda-mps-server"):
        put(dest, "usr/bin/" + b, "#!/bin/sh\necho '%s: fake driver utility %s (gpulet test root)'\n" % (b, ver),
            0o755)
    put(dest, "etc/OpenCL/vendors/nvidia.icd", "libnvidia-opencl.so.1\n")
    put(dest, "usr/share/glvnd/egl_vendor.d/10_nvidia.json",
        '{\n    "file_format_version" : "1.0.0",\n    "ICD" : {\n        "library_path" : "libEGL_nvidia.so.0"\n'
        '    }\n}\n')
    put(dest, "etc/vulkan/icd.d/nvidia_icd.json",
        '{\n    "file_format_version" : "1.0.0",\n    "ICD": {\n        "library_path": "libGLX_nvidia.so.0",\n'
        '        "api_version" : "1.3.277"\n    }\n}\n')

    # processes (what a doctor reads in /proc to find the running kubelet)
    for spec in a.proc:
        pid, _, cmd = spec.partition("=")
        argv = shlex.split(cmd)
        if not pid.isdigit() or not argv:
            die("--proc wants PID=ARGV, got %r" % spec)
        put(dest, "proc/%s/comm" % pid, os.path.basename(argv[0])[:15] + "\n")
        put(dest, "proc/%s/cmdline" % pid, "".join(w + "\0" for w in argv))

    if a.kubeadm_unit:  # docs/reference/kubelet-root-dir.md (kubeadm)
        unit = "usr/lib/systemd/system/kubelet.service"
        put(dest, unit, "[Unit]\nDescription=kubelet: The Kubernetes Node Agent\n\n"
            "[Service]\nExecStart=/usr/bin/kubelet\nRestart=always\n")
        put(dest, unit + ".d/10-kubeadm.conf", "[Service]\n"
            'Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf '
            '--kubeconfig=/etc/kubernetes/kubelet.conf"\n'
            'Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"\n'
            "EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n"
            "EnvironmentFile=-/etc/default/kubelet\n"
            "ExecStart=\n"
            "ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS "
            "$KUBELET_EXTRA_ARGS\n")
        put(dest, "var/lib/kubelet/kubeadm-flags.env",
            'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock"\n')

    # IPC sockets (cdi.md §7.5)
    if not a.no_sockets:
        bind_socket(dest, "run/nvidia-persistenced/socket")
        if fx.get("nvswitches"):
            bind_socket(dest, "run/nvidia-fabricmanager/socket")
        if a.mps:
            bind_socket(dest, "tmp/nvidia-mps/control")
            os.makedirs(os.path.join(dest, "var/log/nvidia-mps"), exist_ok=True)


if __name__ == "__main__":
    main()
