#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Every verb that opens NVML, against NVIDIA's real 535 libnvidia-ml.so.1 on a machine without the
kernel module, on both real driver roots (Debian's layout and the plain one, tests/lib/realdriver.py).

nvmlInit_v2 returns DRIVER_NOT_LOADED there, so each verb must name the library it loaded, NVML's
own text ("Driver Not Loaded", docs/reference/real-driver.md) and the fix, and exit as documented
(CONVENTIONS 5: 1 = failure; the exporter keeps serving and exits 0 on SIGTERM). Each root is
reached the three ways NVML is opened (nvml_open_host): --driver-root, NVIDIA_DRIVER_ROOT below
--root, and --nvml-library.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

SRC = os.environ["GPULET_SRC"]
BUILD = os.environ["GPULET_BUILD"]
GPULET = os.environ.get("GPULET") or os.path.join(BUILD, "gpulet")
LIBDIR = "usr/lib/x86_64-linux-gnu"
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def realdriver_env():
    out = subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tests/lib/realdriver.py"), "env",
                          os.path.join(BUILD, "realdriver")], capture_output=True, text=True, check=True).stdout
    return dict(line.split("=", 1) for line in out.split())


def node_tree(tmp, driver_root):
    """A node as doctor reads it (driver loaded per /proc, device nodes) with the driver under
    /run/nvidia/driver, where the GPU Operator's driver container mounts it."""
    node = os.path.join(tmp, "node")
    os.makedirs(os.path.join(node, "proc/driver/nvidia/gpus/0000:00:1e.0"))
    os.makedirs(os.path.join(node, "sys/module/nvidia"))
    os.makedirs(os.path.join(node, "dev"))
    os.makedirs(os.path.join(node, "run/nvidia"))
    with open(os.path.join(node, "proc/driver/nvidia/version"), "w") as f:
        f.write("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Tue Jun  3 16:00:00 UTC 2025\n")
    for name, minor in (("nvidiactl", 255), ("nvidia0", 0)):
        os.mknod(os.path.join(node, "dev", name), 0o20666, os.makedev(195, minor))
        os.chmod(os.path.join(node, "dev", name), 0o666)
    os.mknod(os.path.join(node, "dev/nvidia-uvm"), 0o20666, os.makedev(511, 0))
    os.chmod(os.path.join(node, "dev/nvidia-uvm"), 0o666)
    os.symlink(driver_root, os.path.join(node, "run/nvidia/driver"))
    return node


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_exporter(args, env):
    """The exporter keeps serving without NVML: wait for its NVML error, read /metrics, SIGTERM."""
    port = free_port()
    p = subprocess.Popen([GPULET, "exporter", f"--address=127.0.0.1:{port}", "--kubernetes=false", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    metrics = healthz = ""
    for _ in range(100):
        time.sleep(0.1)
        try:
            metrics = get(port, "/metrics")
            healthz = get(port, "/healthz")
            if "not ready:" in healthz:  # the first NVML try has ended: /healthz carries its error
                break
        except OSError:
            continue
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    return p.returncode, out + metrics, err, healthz


def get(port, path):
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        return b"".join(iter(lambda: s.recv(65536), b"")).decode()


def run(verb, args, env, tmp):
    if verb == "exporter":
        rc, out, err, healthz = run_exporter(args, env)
        return rc, out + healthz, err
    argv = {
        "devices": ["devices"],
        "cdi generate": ["cdi", "generate", "--output=-"],
        "labels --oneshot": ["labels", "--oneshot", "--output-file=-"],
        "plugin": ["plugin", f"--device-plugin-path={tmp}", "--kubelet-socket="],
        "doctor": ["doctor", "--only=nvml"],
    }[verb]
    p = subprocess.run([GPULET, *argv, *args], capture_output=True, text=True, env=env, timeout=60)
    return p.returncode, p.stdout, p.stderr


VERBS = ("devices", "cdi generate", "labels --oneshot", "plugin", "exporter", "doctor")


def main():
    facts = realdriver_env()
    base_env = {k: v for k, v in os.environ.items() if k not in ("GPULET_NVML_LIBRARY", "NVIDIA_DRIVER_ROOT")}
    for layout, key in (("debian", "REALDRIVER_ROOT_DEBIAN"), ("plain", "REALDRIVER_ROOT_PLAIN")):
        droot = facts[key]
        if not os.path.lexists(os.path.join(droot, LIBDIR, "libnvidia-ml.so.1")):
            check(False, f"{droot}: no libnvidia-ml.so.1; the realdriver_setup fixture failed")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            node = node_tree(tmp, droot)
            lib = os.path.realpath(os.path.join(droot, LIBDIR, "libnvidia-ml.so.1")) if layout == "plain" else \
                os.path.join(droot, LIBDIR, "nvidia/current/libnvidia-ml.so.1")
            ways = (
                ("--driver-root", [f"--root={node}", f"--driver-root=/run/nvidia/driver"], {},
                 os.path.join(node, "run/nvidia/driver", LIBDIR, "libnvidia-ml.so.1")),
                ("NVIDIA_DRIVER_ROOT under --root", [f"--root={node}"], {"NVIDIA_DRIVER_ROOT": "/run/nvidia/driver"},
                 os.path.join(node, "run/nvidia/driver", LIBDIR, "libnvidia-ml.so.1")),
                ("--nvml-library", [f"--root={node}", f"--nvml-library={lib}"], {}, lib),
            )
            for way, args, extra, loaded in ways:
                for verb in VERBS:
                    rc, out, err = run(verb, args, dict(base_env, **extra), tmp)
                    text = out + err
                    what = f"{layout} root, {way}: gpulet {verb}"
                    check(rc == (0 if verb == "exporter" else 1), f"{what}: exit {rc}")
                    check(f"NVML from {loaded} failed to initialize: Driver Not Loaded (DRIVER_NOT_LOADED)" in text,
                          f"{what}: names {loaded} and NVML's 'Driver Not Loaded'")
                    check("modprobe nvidia" in text, f"{what}: says what to do (modprobe nvidia)")
                    if verb == "exporter":
                        check("gpulet_exporter_ready 0" in text, f"{what}: /metrics says not ready")
                        check(re.search(r"HTTP/1\.\d 503.*not ready: NVML from \S+ failed to initialize: Driver Not "
                                        r"Loaded.*modprobe nvidia", text, re.S) is not None,
                              f"{what}: /healthz answers 503 with NVML's error and the fix")
                    if verb == "doctor":
                        check("nvml.load-failed" in text, f"{what}: finding nvml.load-failed")
                    if rc not in (0, 1) or failures and failures[-1].startswith(what):
                        print(text[-3000:])
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
