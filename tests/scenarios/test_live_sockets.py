#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gpulet doctor --live: on the running node a plugin socket nobody listens on (the plugin died or was
OOM-killed) is plugin.not-registered with "socket is stale", not a working plugin; a listening
plugin socket is fine. Env GPULET, FAKE_NVML_LIB, GPULET_SRC (set by CTest)."""
import json, os, socket, subprocess, sys, tempfile

SRC = os.environ.get("GPULET_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPULET = os.environ.get("GPULET") or os.path.join(SRC, "build", "gpulet")
FAKE = os.environ.get("FAKE_NVML_LIB") or os.path.join(SRC, "build", "fakenvml", "libnvidia-ml.so.1")
FIXTURE = os.path.join(SRC, "tests", "fixtures", "dgx-a100.json")
errs = []


def listen(path):
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.listen(8)
    return s


def doctor(root, *extra):
    p = subprocess.run([GPULET, "doctor", "--root", root, "--nvml-library", FAKE, "--json", "--only", "plugin", *extra],
                       env=dict(os.environ, FAKE_NVML_FIXTURE=FIXTURE), capture_output=True, text=True, timeout=60)
    return p.returncode, {f["id"]: f for f in json.loads(p.stdout)["findings"]}


with tempfile.TemporaryDirectory() as tmp:
    root = os.path.join(tmp, "root")
    subprocess.run(["sh", os.path.join(SRC, "tests", "lib", "mkroot.sh"), root, FIXTURE], check=True,
                   stdout=subprocess.DEVNULL)
    dp = os.path.join(root, "var/lib/kubelet/device-plugins")
    os.makedirs(dp, exist_ok=True)
    os.makedirs(os.path.join(root, "var/lib/kubelet/pod-resources"), exist_ok=True)
    kubelet = listen(os.path.join(dp, "kubelet.sock"))
    plugin = listen(os.path.join(dp, "nvidia-gpu.sock"))
    rc, got = doctor(root, "--live")
    if "plugin.not-registered" in got:
        errs.append(f"listening plugin socket reported as not registered: {got['plugin.not-registered']}")
    plugin.close()  # the plugin dies: its socket file stays, nobody listens
    rc, got = doctor(root, "--live")
    f = got.get("plugin.not-registered")
    if rc != 1 or not f or f["severity"] != "fail":
        errs.append(f"stale plugin socket: exit {rc}, findings {list(got)}; expected plugin.not-registered fail")
    elif not any("socket is stale (the plugin died or was OOM-killed)" in e and "nvidia-gpu.sock" in e
                 for e in f["evidence"]) or "OOMKilled" not in f["fix"]:
        errs.append(f"stale plugin socket: evidence/fix lack the stale socket and what to do: {f}")
    # without --live a node snapshot's sockets are files, not checked (the scenarios rely on that)
    rc, got = doctor(root)
    if "plugin.not-registered" in got:
        errs.append("stale socket reported on a non-live root")
    kubelet.close()

for e in errs:
    print("FAIL", e)
print("live sockets: %d failures" % len(errs))
sys.exit(1 if errs else 0)
