#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gpulet probe against a fake container root (tests/lib/mkroot.sh) and the fake libcuda
(build/fakecuda/libcuda.so.1, driven by FAKE_CUDA_*): each in-container failure of the field guide
must be named, and later failures it explains must not be reported again.
Usage: test_probe.py PATH/TO/libcuda.so.1"""
import json, os, shutil, subprocess, sys, tempfile

SRC = os.environ.get("GPULET_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPULET = os.environ.get("GPULET") or os.path.join(SRC, "build", "gpulet")
FAKE_NVML = os.environ.get("FAKE_NVML_LIB") or os.path.join(SRC, "build", "fakenvml", "libnvidia-ml.so.1")
CUDA = sys.argv[1]
errs = []


def probe(root, env=None, args=(), user=None):
    cmd = [GPULET, "probe", "--json", "--root", root, "--cuda-library", CUDA, "--nvml-library", FAKE_NVML, *args]
    if user:
        cmd = ["setpriv", "--reuid", str(user), "--regid", str(user), "--clear-groups", *cmd]
    e = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_CUDA", "CUDA_VERSION"))}
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        return p.returncode, {}, p.stdout + p.stderr
    return p.returncode, {f["id"]: f for f in doc["findings"]}, doc


def case(name, rc, got, want_fail=(), absent=(), want_rc=None, text=None):
    for i in want_fail:
        if got.get(i, {}).get("severity") != "fail":
            errs.append(f"{name}: expected {i} fail, got {sorted(got)}")
    for i in absent:
        if i in got:
            errs.append(f"{name}: {i} must not be reported")
    if want_rc is not None and rc != want_rc:
        errs.append(f"{name}: exit {rc}, expected {want_rc}")
    if text and not any(text in f["summary"] for f in got.values()):
        errs.append(f"{name}: no summary says {text!r}")


tmp = tempfile.mkdtemp(prefix="probe-")
os.chmod(tmp, 0o755)
try:
    mk = os.path.join(SRC, "tests", "lib", "mkroot.sh")
    root, bare = os.path.join(tmp, "root"), os.path.join(tmp, "bare")
    subprocess.run([mk, root, "single-t4"], check=True, capture_output=True)
    subprocess.run([mk, bare, "single-t4", "--no-devnodes"], check=True, capture_output=True)
    # mkroot's nodes carry NVIDIA's numbers (195:N); with no kernel module here open() says ENXIO, which is
    # what a container sees on a node whose driver is not loaded. For the cases where the driver answers,
    # the nodes are re-made as 1:3 (/dev/null's numbers): they open like a driver-backed node.
    nodrv = os.path.join(tmp, "nodrv")
    subprocess.run([mk, nodrv, "single-t4"], check=True, capture_output=True)
    for n in os.listdir(os.path.join(root, "dev")):
        if n.startswith("nvidia") and n != "nvidia-caps":
            p = os.path.join(root, "dev", n)
            if os.path.exists(p) and not os.path.isdir(p):
                os.unlink(p)
                os.mknod(p, 0o20666, os.makedev(1, 3))

    rc, got, _ = probe(root, {"CUDA_VERSION": "12.4.1"})
    case("healthy", rc, got, absent=[i for i in got if got[i]["severity"] != "ok"], want_rc=0)
    if "probe.cuda-version.ok" not in got:
        errs.append("healthy: the CUDA version comparison did not run")

    rc, got, _ = probe(bare, {"FAKE_CUDA_INIT": "100"})
    case("no device nodes", rc, got, ["probe.no-device-nodes"], ["probe.cuinit-failed"], 1, "runtimeClassName")

    rc, got, _ = probe(root, args=["--cuda-library", os.path.join(tmp, "missing", "libcuda.so.1")])
    case("libcuda missing", rc, got, ["probe.libcuda-missing"], ["probe.cuinit-failed"], 1)

    rc, got, _ = probe(root, {"FAKE_CUDA_INIT": "100"})
    case("cuInit no device", rc, got, ["probe.cuinit-failed"], [], 1, "CUDA_ERROR_NO_DEVICE")

    # more GPUs than readdir keeps in order: the evidence names the nodes as `ls` would, GPUs by number
    for i in range(1, 12):
        os.mknod(os.path.join(nodrv, "dev", f"nvidia{i}"), 0o20666, os.makedev(195, i))
    rc, got, _ = probe(nodrv, {"FAKE_CUDA_INIT": "100", "CUDA_VERSION": "12.4.1"})
    named = [e.split()[1].rstrip(":") for e in got.get("probe.driver-not-loaded", {}).get("evidence", [])]
    gpus = [f"/dev/nvidia{i}" for i in range(12)]
    if named != gpus + sorted(set(named) - set(gpus)) or len(named) < 13:
        errs.append(f"device nodes but no driver: the nodes are not named in order: {named}")
    case("device nodes but no driver", rc, got, ["probe.driver-not-loaded"], ["probe.cuinit-failed",
         "probe.no-device-nodes"], 1, "no NVIDIA kernel driver answers")
    if got.get("probe.driver-not-loaded", {}).get("component") != "driver":
        errs.append("device nodes but no driver: the failure must be named under the driver link")
    if "probe.cuda-version.ok" not in got:
        errs.append("device nodes but no driver: cuDriverGetVersion needs no device, the CUDA comparison must run")

    rc, got, doc = probe(root)
    skipped = {s["check"]: s for s in doc.get("skipped", [])} if isinstance(doc, dict) else {}
    if "cuda.ok" in got or "CUDA_VERSION" not in skipped.get("cuda", {}).get("reason", ""):
        errs.append(f"no CUDA_VERSION: the cuda check must say it was not checked, got {sorted(got)} {skipped}")

    rc, got, _ = probe(root, {"FAKE_CUDA_INIT": "35", "FAKE_CUDA_DRIVER_VERSION": "12020", "CUDA_VERSION": "12.4.1"})
    case("insufficient driver", rc, got, ["probe.cuinit-failed", "probe.cuda-driver-too-old"], [], 1,
         "CUDA driver version is insufficient")

    # mkroot makes 0666 nodes like the driver default; a 0660 root-owned node and a non-root user fail
    for n in os.listdir(os.path.join(root, "dev")):
        if n.startswith("nvidia"):
            os.chmod(os.path.join(root, "dev", n), 0o660)
    os.chmod(CUDA, 0o755)
    rc, got, out = probe(root, user=65534)
    case("non-root, 0660 nodes", rc, got, ["probe.devnode-permission"], ["probe.no-device-nodes"], 1, "non-root")

    rc = subprocess.run([GPULET, "probe", "extra"], capture_output=True).returncode
    if rc != 2:
        errs.append(f"an extra argument must be a usage error, got {rc}")
finally:
    shutil.rmtree(tmp)
print("\n".join(errs) if errs else "OK: probe cases")
sys.exit(1 if errs else 0)
