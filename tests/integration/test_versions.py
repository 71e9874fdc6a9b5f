#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gpulet versions on fake node roots: sources (dpkg, --node nodeInfo, --pods image tags, NVML) and
verdicts (toolkit vs driver, containerd and kubelet vs CDI), JSON shape and exit status."""
import json, os, shutil, subprocess, sys, tempfile

SRC = os.environ.get("GPULET_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPULET = os.environ.get("GPULET") or os.path.join(SRC, "build", "gpulet")
FAKE = os.environ.get("FAKE_NVML_LIB") or os.path.join(SRC, "build", "fakenvml", "libnvidia-ml.so.1")
errs = []


def run(root, fixture, *args):
    env = dict(os.environ, FAKE_NVML_FIXTURE=os.path.join(SRC, "tests", "fixtures", f"{fixture}.json"))
    p = subprocess.run([GPULET, "versions", "--json", "--root", root, "--nvml-library", FAKE, *args],
                       capture_output=True, text=True, env=env)
    return p.returncode, {c["name"]: c for c in json.loads(p.stdout)["components"]}


tmp = tempfile.mkdtemp(prefix="ver-")
try:
    root = os.path.join(tmp, "root")
    subprocess.run([os.path.join(SRC, "tests", "lib", "mkroot.sh"), root, "dgx-a100"], check=True, capture_output=True)
    os.makedirs(f"{root}/var/lib/dpkg")
    open(f"{root}/var/lib/dpkg/status", "w").write(
        "Package: containerd\nStatus: install ok installed\nVersion: 1.6.20~ds1-1+deb12u3\n\n"
        "Package: kubelet\nVersion: 1.27.3-1.1\n\n"
        "Package: nvidia-container-toolkit\nVersion: 1.11.0-1\n\n")
    rc, c = run(root, "dgx-a100")
    if rc != 1:
        errs.append(f"toolkit 1.11 with driver 550 must fail (exit 1), got {rc}")
    want = {"driver": "550.54.15", "cuda": "12.4", "toolkit": "1.11.0", "containerd": "1.6.20", "kubelet": "1.27.3"}
    for k, v in want.items():
        if c.get(k, {}).get("version") != v:
            errs.append(f"{k}: expected {v}, got {c.get(k)}")
    sev = lambda name: [v["severity"] for v in c[name]["verdicts"]]
    if "fail" not in sev("toolkit") or "warn" not in sev("containerd") or "warn" not in sev("kubelet"):
        errs.append(f"verdicts: toolkit {sev('toolkit')} containerd {sev('containerd')} kubelet {sev('kubelet')}")
    if any(not v["source"] for comp in c.values() for v in comp["verdicts"]):
        errs.append("every verdict needs a source")

    # cluster facts win: nodeInfo and the plugin/operator pods
    json.dump({"kind": "Node", "status": {"nodeInfo": {"kubeletVersion": "v1.30.2",
                                                       "containerRuntimeVersion": "containerd://2.0.1"}}},
              open(f"{tmp}/node.json", "w"))
    json.dump({"kind": "List", "items": [
        {"kind": "Pod", "metadata": {"name": "dp"}, "spec": {"containers": [
            {"name": "p", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}]}},
        {"kind": "Pod", "metadata": {"name": "op"}, "spec": {"containers": [
            {"name": "o", "image": "nvcr.io/nvidia/gpu-operator:v24.9.0"}]}}]}, open(f"{tmp}/pods.json", "w"))
    open(f"{root}/var/lib/dpkg/status", "a").write("Package: nvidia-container-toolkit-base\nVersion: 1.17.3-1\n\n")
    open(f"{root}/var/lib/dpkg/status", "w").write("Package: nvidia-container-toolkit\nVersion: 1:1.17.3-1\n\n")
    rc, c = run(root, "dgx-a100", "--node", f"{tmp}/node.json", "--pods", f"{tmp}/pods.json")
    want = {"toolkit": "1.17.3", "containerd": "2.0.1", "kubelet": "v1.30.2", "plugin": "0.17.0", "operator": "24.9.0"}
    for k, v in want.items():
        if c.get(k, {}).get("version") != v:
            errs.append(f"with --node/--pods {k}: expected {v}, got {c.get(k)}")
    if rc != 0:
        errs.append(f"a compatible node must exit 0, got {rc}: {json.dumps(c)[:400]}")

    # the driver root from NVIDIA_DRIVER_ROOT below --root: the verb's own row reads it (no library reads
    # env vars, util/hostpaths.h), as --driver-root; without either NVML is not found under the root
    lib = f"{root}/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
    os.makedirs(os.path.dirname(lib))
    shutil.copy(FAKE, lib)
    env = dict(os.environ, FAKE_NVML_FIXTURE=os.path.join(SRC, "tests", "fixtures", "dgx-a100.json"))
    env.pop("GPULET_NVML_LIBRARY", None)
    for how, args, extra in (("NVIDIA_DRIVER_ROOT", [], {"NVIDIA_DRIVER_ROOT": "/run/nvidia/driver"}),
                             ("--driver-root", ["--driver-root", "/run/nvidia/driver"], {}), ("neither", [], {})):
        e = {k: v for k, v in env.items() if k != "NVIDIA_DRIVER_ROOT"}
        e.update(extra)
        p = subprocess.run([GPULET, "versions", "--json", "--root", root, *args], capture_output=True, text=True, env=e)
        try:
            cuda = {x["name"]: x for x in json.loads(p.stdout)["components"]}.get("cuda", {})
        except ValueError:
            cuda = {}
        from_nvml = "NVML" in cuda.get("source", "")  # else the CUDA table for the driver version
        if from_nvml != (how != "neither"):
            errs.append(f"versions with {how}: cuda from {cuda.get('source')!r} (rc {p.returncode}): {p.stderr[-300:]}")
finally:
    shutil.rmtree(tmp)
print("\n".join(errs) if errs else "OK: versions ledger")
sys.exit(1 if errs else 0)
