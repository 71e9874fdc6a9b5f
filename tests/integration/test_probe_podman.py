#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The portable probe (issue 16.4): build/gpulet-probe needs only glibc (its NEEDED list is libc; libcuda and
libnvidia-ml are dlopen'd) and runs inside podman 4.3 + runc in a container whose root holds nothing but
glibc (libc, libm, libdl, libpthread, librt and the loader, copied from this Debian 12 host) and the
probe. CDI (a spec in the container's /var/run/cdi, read by podman) injects the device nodes and NVIDIA's
real libcuda.so.1 and libnvidia-ml.so.1 (Debian 12 non-free 535, tests/lib/realdriver.py).

This machine has no NVIDIA GPU or kernel module, so the probe can only report what is true here:
  - nodes with NVIDIA's majors, no driver behind them -> probe.driver-not-loaded; the real libraries were
    found and loaded (no *-missing finding), cuInit is skipped as explained by the driver finding, and
    cuDriverGetVersion answered (CUDA_VERSION=12.2 is judged against the real library's 12.2);
  - nodes that open (the null device under NVIDIA's names) -> cuInit runs in the real libcuda and its
    CUresult is reported as probe.cuinit-failed;
  - no CDI device at all -> probe.no-device-nodes and probe.libcuda-missing.
Usage: test_probe_podman.py DRIVER_ROOT   (realdriver root-plain: usr/lib/x86_64-linux-gnu/libcuda.so.1, ...)"""
import json
import os
import shutil
import subprocess
import sys

from test_cdi_podman import Podman, podman_tmpdir, need
from test_cdi_testlib import BUILD, check, finish

PROBE = os.path.join(BUILD, "gpulet-probe")
LIBDIR = "/usr/lib/x86_64-linux-gnu"
GLIBC = ["libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "ld-linux-x86-64.so.2"]


def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return {line.split("[")[1].split("]")[0] for line in out.splitlines() if "(NEEDED)" in line}


def bare_rootfs(path):
    """glibc and the probe, nothing else (no shell, no ld.so.cache: the loader's default dirs)."""
    for d in ("lib64", "lib/x86_64-linux-gnu", "usr/bin", LIBDIR.lstrip("/")):
        os.makedirs(os.path.join(path, d), exist_ok=True)
    for lib in GLIBC:
        shutil.copy(os.path.join("/lib/x86_64-linux-gnu", lib), os.path.join(path, "lib/x86_64-linux-gnu", lib))
    shutil.copy("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", os.path.join(path, "lib64"))
    shutil.copy(PROBE, os.path.join(path, "usr/bin/gpulet-probe"))


def spec(nodes_dir, cuda, nvml):
    """A CDI spec, 0.5.0 (podman 4.3), written by hand: the probe is judged, not our generator."""
    def node(name, d):
        return {"path": "/dev/" + name, "hostPath": os.path.join(nodes_dir, d, name)}
    names = ("nvidia0", "nvidiactl", "nvidia-uvm")
    libs = [{"hostPath": os.path.realpath(p), "containerPath": f"{LIBDIR}/{os.path.basename(p)}",
             "options": ["ro", "nosuid", "nodev", "bind"]} for p in (cuda, nvml)]
    return {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
            "devices": [{"name": "0", "containerEdits": {"deviceNodes": [node(n, "nvidia") for n in names]}},
                        {"name": "opens", "containerEdits": {"deviceNodes": [node(n, "null") for n in names]}}],
            "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"], "mounts": libs}}


def make_nodes(d):
    for sub, majmin in (("nvidia", {"nvidia0": (195, 0), "nvidiactl": (195, 255), "nvidia-uvm": (235, 0)}),
                        ("null", {n: (1, 3) for n in ("nvidia0", "nvidiactl", "nvidia-uvm")})):
        os.makedirs(os.path.join(d, sub))
        for name, (ma, mi) in majmin.items():
            os.mknod(os.path.join(d, sub, name), 0o666 | 0o020000, os.makedev(ma, mi))


def probe(p, devices, env=()):
    r = p.run(devices, command=["/usr/bin/gpulet-probe", "--json"], env=env)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        check(False, f"probe in podman {devices}: no JSON, rc {r.returncode}: {r.stdout} {r.stderr}")
        return r.returncode, {}, {}
    return r.returncode, {f["id"]: f for f in doc["findings"]}, {s["check"]: s for s in doc["skipped"]}


def main():
    for tool in ("podman", "runc", "unshare"):
        need(tool)
    driver_root = sys.argv[1]
    cuda, nvml = (os.path.join(driver_root, LIBDIR.lstrip("/"), n) for n in ("libcuda.so.1", "libnvidia-ml.so.1"))
    for lib in (cuda, nvml):
        check(os.path.exists(lib), f"{lib}: the real driver files were fetched")
    n = needed(PROBE)
    check(n == {"libc.so.6"}, f"gpulet-probe needs only libc (and the loader): NEEDED {sorted(n)}")
    with podman_tmpdir("gpulet-probe-podman.") as tmp:
        p = Podman(tmp)
        shutil.rmtree(p.rootfs)
        bare_rootfs(p.rootfs)
        make_nodes(os.path.join(tmp, "nodes"))
        p.reset()
        with open(os.path.join(p.run_dir, "nvidia.json"), "w") as f:
            json.dump(spec(os.path.join(tmp, "nodes"), cuda, nvml), f)

        # 1. NVIDIA's device nodes and the real libraries, no kernel driver behind the nodes
        rc, found, skipped = probe(p, ["nvidia.com/gpu=0"], ["CUDA_VERSION=12.2"])
        check(rc == 1, f"nodes without a driver: exit {rc}")
        check(found.get("probe.driver-not-loaded", {}).get("severity") == "fail", f"driver-not-loaded: {sorted(found)}")
        check("probe.no-device-nodes" not in found, "the injected nodes are seen")
        check("probe.libcuda-missing" not in found and "probe.nvml-missing" not in found,
              f"the real libcuda.so.1 and libnvidia-ml.so.1 load in the bare container: {sorted(found)}")
        check(skipped.get("cuinit", {}).get("explained_by") == "probe.driver-not-loaded",
              f"cuInit skipped, explained by the driver: {skipped.get('cuinit')}")
        check("probe.cuda-version.ok" in found, f"cuDriverGetVersion of the real libcuda answered 12.2: {sorted(found)}")

        # 2. nodes that open: cuInit runs in the real libcuda and its error is reported
        rc, found, skipped = probe(p, ["nvidia.com/gpu=opens"])
        f = found.get("probe.cuinit-failed", {})
        check(rc == 1 and f.get("severity") == "fail", f"cuInit in the real libcuda fails here: {rc} {sorted(found)}")
        ev = " ".join(f.get("evidence", []))
        check("cuInit(0) = " in ev and "libcuda.so.1" in ev and "cuInit(0) = 0 " not in ev, f"cuInit's result: {ev}")
        print(f"cuInit in the container: {f.get('summary')}")

        # 3. no CDI device: nothing injected
        rc, found, _ = probe(p, [])
        check(rc == 1 and "probe.no-device-nodes" in found and "probe.libcuda-missing" in found,
              f"no device: {rc} {sorted(found)}")
    return finish("gpulet-probe runs on bare glibc with CDI-injected nodes and the real libcuda")


if __name__ == "__main__":
    sys.exit(main())
