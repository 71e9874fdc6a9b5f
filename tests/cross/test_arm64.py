#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gpulet for arm64, cross-built with Debian's cross toolchain and run under Debian's qemu-user-static:

  * the Debian 12 arm64 root of the -dev packages (cmake/cross/sysroot.sh, cached in ~/.cache/gpulet-cross:
    seconds once made) and the arm64 tree in $GPULET_BUILD/arm64 (cmake/cross/aarch64.cmake; incremental);
  * gpulet, its serving modules, gpulet-probe and the static gpulet-cdi-hook are AArch64 ELF files; the
    hook has no program interpreter (static) and runs under qemu with no root at all;
  * under qemu-aarch64-static -L ROOT: `gpulet --help`, a lean verb, a verb that loads gpulet-http.so, the
    hook's --help;
  * the unit tests below, built for arm64, pass under qemu (CTest runs them through the toolchain's
    CROSSCOMPILING_EMULATOR): util, parse, CDI, doctor, kube (gRPC client), kapi, NVML tables, plugin
    config, labels, exporter metrics, web.
Timings are printed (cold: the root fetched and every object compiled; warm: nothing to do)."""
import os
import subprocess
import sys
import time

SRC = os.environ.get("GPULET_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GPULET_BUILD") or os.path.join(SRC, "build")
TREE = os.path.join(BUILD, "arm64")
JOBS = os.environ.get("GPULET_JOBS", "2")
# unit tests that need neither the fake NVML (an x86-64 library here) nor the real driver's files. Left
# out: the hook's (cdihook_unit, _guards, _jail: they run this machine's x86-64 ldconfig and libz, and make
# namespaces and mounts that qemu-user does not emulate; the static arm64 hook is run above), and those of
# the fake NVML (nvml_loader, host_driver, ...)
UNITS = ["util_enumtab", "util_opt", "util_optspec", "util_log", "util_hostpaths", "parse_yaml", "parse_toml",
         "cdi_unit", "cdi_validate_unit", "cdi_fuzz_smoke", "cmd_argv", "doctor_unit", "doctor_html_unit",
         "kube_checkpoint", "kube_k8sobj", "kube_kubeletcfg", "kube_grpc_client", "kapi_config", "kapi_wire",
         "nvml_xid", "nvml_migminors", "host_ldcache", "plugin_config_unit", "labels_unit", "exporter_metrics",
         "web_authq"]
BINS = ["gpulet", "gpulet-grpc.so", "gpulet-http.so", "gpulet-probe", "gpulet-cdi-hook"]


def run(cmd, what, **kw):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        print("FAIL %s (exit %d):\n%s\n%s" % (what, p.returncode, p.stdout[-4000:], p.stderr[-4000:]))
        sys.exit(1)
    print("ok   %s (%.1fs)" % (what, time.time() - t0), flush=True)
    return p.stdout


def elf(path):
    """(machine, has a program interpreter) from the ELF header and program headers (readelf)."""
    h = run(["readelf", "-h", "-l", "-W", path], "readelf " + os.path.basename(path))
    machine = next(line.split(":", 1)[1].strip() for line in h.splitlines() if "Machine:" in line)
    return machine, "INTERP" in h


def main():
    t0 = time.time()
    root = run([os.path.join(SRC, "cmake/cross/sysroot.sh"), "arm64"], "the arm64 root").strip()
    if not os.path.exists(os.path.join(TREE, "CMakeCache.txt")):
        run(["cmake", "-S", SRC, "-B", TREE, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
             "-DCMAKE_TOOLCHAIN_FILE=" + os.path.join(SRC, "cmake/cross/aarch64.cmake"), "-DGPULET_SYSROOT=" + root],
            "configure " + TREE)
    run(["cmake", "--build", TREE, "-j" + JOBS, "--target", "gpulet", *UNITS], "cross build")
    for b in BINS:
        machine, interp = elf(os.path.join(TREE, b))
        # executables: a program interpreter, but the static hook; modules: none
        if machine != "AArch64" or interp != (b in ("gpulet", "gpulet-probe")):
            print("FAIL %s: machine %s, program interpreter %s" % (b, machine, interp))
            return 1
    qemu = ["qemu-aarch64-static", "-L", root]
    gpulet = os.path.join(TREE, "gpulet")
    out = run(qemu + [gpulet, "--help"], "qemu: gpulet --help")
    assert "doctor" in out and "plugin" in out, out
    run(qemu + [gpulet, "lint", "--help"], "qemu: gpulet lint --help (lean)")
    out = run(qemu + [gpulet, "exporter", "--help"], "qemu: gpulet exporter --help (loads gpulet-http.so)")
    assert "--web-config-file" in out, out
    out = run(["qemu-aarch64-static", os.path.join(TREE, "gpulet-cdi-hook"), "--help"],
              "qemu: gpulet-cdi-hook --help (static, no root)")
    assert "update-ldcache" in out, out
    out = run(["ctest", "--output-on-failure", "-j" + JOBS, "-R", "^(%s)$" % "|".join(UNITS)],
              "%d unit tests under qemu" % len(UNITS), cwd=TREE)
    print(out.strip().splitlines()[-1] if out.strip() else "")
    print("PASS arm64: %d unit tests and --help under qemu (%.0fs)" % (len(UNITS), time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
