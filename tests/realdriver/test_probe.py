#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gpulet probe with NVIDIA's real libcuda.so.1 and libnvidia-ml.so.1 (Debian 12 non-free, 535), on this
machine that has no NVIDIA kernel module: the real library answers cuInit with CUDA_ERROR_NO_DEVICE (100)
and cuDriverGetVersion with 12020 whether or not device nodes exist. Each case runs in its own mount
namespace whose /dev is a tmpfs, so the real libcuda and the probe see the same device nodes:
  - no /dev/nvidia*          -> probe.no-device-nodes (devnode link); cuinit not run, explained by it;
                                the CUDA comparison still runs (cuDriverGetVersion needs no device)
  - nodes 195:N, no driver   -> probe.driver-not-loaded (driver link), not "the container did not get a GPU"
  - CUDA_VERSION absent      -> the cuda check is listed as not checked, with the reason; never "ok"
Usage: test_probe.py DRIVER_ROOT   (a root holding the extracted packages: usr/lib/x86_64-linux-gnu/...)"""
import glob, json, os, subprocess, sys

SRC = os.environ.get("GPULET_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPULET = os.environ.get("GPULET") or os.path.join(SRC, "build", "gpulet")
ROOT = sys.argv[1]
errs = []


def real_lib(name):
    hits = sorted(glob.glob(os.path.join(ROOT, "usr/lib/x86_64-linux-gnu/**", name), recursive=True))
    if not hits:
        sys.exit(f"FAIL: no {name} under {ROOT}: the real driver files were not fetched")
    return hits[0]


CUDA, NVML = real_lib("libcuda.so.1"), real_lib("libnvidia-ml.so.1")

# The case's /dev: a tmpfs with the nodes every program needs, plus NVIDIA's when asked for.
SETUP = """set -e
d=$(mktemp -d)
mount -t tmpfs -o mode=755 tmpfs "$d"
for n in null zero urandom random; do touch "$d/$n"; mount --bind "/dev/$n" "$d/$n"; done
if [ "$NODES" = 1 ]; then
  mknod -m 666 "$d/nvidiactl" c 195 255; mknod -m 666 "$d/nvidia0" c 195 0; mknod -m 666 "$d/nvidia-uvm" c 235 0
fi
mount --move "$d" /dev
exec "$@"
"""


def probe(nodes, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "NVIDIA_"))}
    e.update(env or {}, NODES="1" if nodes else "0")
    cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", SETUP, "sh",
           GPULET, "probe", "--json", "--root", "/", "--cuda-library", CUDA, "--nvml-library", NVML]
    p = subprocess.run(cmd, capture_output=True, text=True, env=e)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        errs.append(f"probe printed no JSON (exit {p.returncode}): {p.stdout}{p.stderr}")
        return p.returncode, {}, {}
    return p.returncode, {f["id"]: f for f in doc["findings"]}, {s["check"]: s for s in doc["skipped"]}


def expect(name, cond, what):
    if not cond:
        errs.append(f"{name}: {what}")


rc, got, skipped = probe(False, {"CUDA_VERSION": "12.2.0"})
name = "no device nodes"
expect(name, rc == 1, f"exit {rc}, expected 1")
expect(name, got.get("probe.no-device-nodes", {}).get("component") == "devnode", f"got {sorted(got)}")
expect(name, "probe.driver-not-loaded" not in got and "probe.cuinit-failed" not in got, f"got {sorted(got)}")
expect(name, skipped.get("cuinit", {}).get("explained_by") == "probe.no-device-nodes", f"skipped {skipped}")
expect(name, "probe.cuda-version.ok" in got, f"the CUDA 12.2 vs driver comparison did not run: {sorted(got)}")
expect(name, "libraries.ok" in got, f"the real libcuda/libnvidia-ml did not load: {sorted(got)}")

rc, got, skipped = probe(True, {"CUDA_VERSION": "12.2.0"})
name = "device nodes, no driver"
f = got.get("probe.driver-not-loaded", {})
expect(name, rc == 1, f"exit {rc}, expected 1")
expect(name, f.get("severity") == "fail" and f.get("component") == "driver", f"got {sorted(got)}")
expect(name, any("No such device" in e for e in f.get("evidence", [])), f"evidence {f.get('evidence')}")
expect(name, "probe.no-device-nodes" not in got and "probe.cuinit-failed" not in got, f"got {sorted(got)}")
expect(name, skipped.get("cuinit", {}).get("explained_by") == "probe.driver-not-loaded", f"skipped {skipped}")

rc, got, skipped = probe(True)
name = "no CUDA_VERSION"
expect(name, "cuda.ok" not in got and not any(i.startswith("probe.cuda-") for i in got), f"got {sorted(got)}")
expect(name, "CUDA_VERSION" in skipped.get("cuda", {}).get("reason", ""), f"skipped {skipped}")

print("\n".join(errs) if errs else "OK: probe with the real libcuda (3 cases)")
sys.exit(1 if errs else 0)
