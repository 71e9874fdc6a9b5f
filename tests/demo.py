#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`make demo`: gpulet on the embedded default, a simulated DGX A100 node.

The node is the fake NVML library answering from tests/fixtures/dgx-a100.json (8x A100-SXM4-40GB,
MIG on GPUs 6 and 7) plus a fake node root (device nodes, driver libraries, ld.so.cache, mig-minors)
built by tests/lib/mkroot.sh. The main job, `gpulet plugin`, registers with a kubelet stand-in
(python3-grpcio) exactly as it would with kubelet, and the stand-in asks it for GPUs.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "integration"))
import plugin_lib as pl  # noqa: E402


def step(title):
    print("\n\033[1m== %s\033[0m" % title, flush=True)


def gpulet(h, *args):
    cmd = [pl.GPULET, *args]
    print("$ gpulet " + " ".join(a.replace(h.tmp, "$DEMO") for a in args), flush=True)
    r = subprocess.run(cmd, env=h.plugin_env(), capture_output=True, text=True)
    out = (r.stdout + r.stderr).replace(h.tmp, "$DEMO")
    lines = out.splitlines()
    print("\n".join(lines[:40]) + ("\n  ... (%d more lines)" % (len(lines) - 40) if len(lines) > 40 else ""))
    return r.returncode


CONTAINERD = """version = 2
[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
        BinaryName = "/usr/bin/runc"
"""


def main():
    h = pl.Harness("dgx-a100")
    # kubelet's device-plugin dir and containerd's config live inside the simulated node root,
    # so `gpulet doctor --root` sees the node as kubelet and containerd would.
    h.dp = os.path.join(h.root, "var/lib/kubelet/device-plugins")
    os.makedirs(h.dp, exist_ok=True)
    os.makedirs(os.path.join(h.root, "etc/containerd"), exist_ok=True)
    with open(os.path.join(h.root, "etc/containerd/config.toml"), "w") as f:
        f.write(CONTAINERD)
    os.makedirs(os.path.join(h.root, "usr/bin"), exist_ok=True)
    with open(os.path.join(h.root, "usr/bin/runc"), "w") as f:  # the runtime binary containerd would exec
        f.write("#!/bin/sh\n")
    os.chmod(os.path.join(h.root, "usr/bin/runc"), 0o755)
    # the CDI hook the plugin's spec names, installed where gpulet's chart points the plugin at it
    # (values cdi.nvidiaHookPath: /usr/bin/nvidia-cdi-hook, gpulet's static hook under that name)
    shutil.copy(os.path.join(os.path.dirname(pl.GPULET), "gpulet-cdi-hook"),
                os.path.join(h.root, "usr/bin/nvidia-cdi-hook"))
    try:
        print("Simulated node in %s (fake NVML: %s)" % (h.tmp, pl.FAKE_NVML_LIB))
        step("What the driver reports")
        gpulet(h, "devices", "--nvml-library", pl.FAKE_NVML_LIB, "--root", h.root)

        step("The main job: gpulet plugin, registering with a kubelet stand-in")
        h.start_standin()
        h.start_plugin("--mig-strategy", "mixed", "--device-list-strategy", "envvar,cdi-cri",
                       "--nvidia-cdi-hook-path", "/usr/bin/nvidia-cdi-hook",
                       wait_resources=("nvidia.com/gpu", "nvidia.com/mig-1g.5gb"))
        regs = [e for e in h.events.items if e["event"] == "register"]
        for e in regs:
            print("kubelet: Register %s on %s" % (e.get("resource"), e.get("endpoint")))
        lists = {}
        for e in h.events.items:
            if e["event"] == "list":
                lists[e["resource"]] = e["devices"]
        for res, devs in sorted(lists.items()):
            healthy = sum(1 for d in devs if d["health"] == "Healthy")
            print("kubelet: %-26s allocatable %d/%d" % (res, healthy, len(devs)))
        gpus = [d["id"] for d in lists["nvidia.com/gpu"]][:2]
        resp = h.allocate("nvidia.com/gpu", gpus)
        c = resp.container_responses[0]
        print("kubelet: Allocate %s ->" % gpus)
        for k, v in sorted(c.envs.items()):
            print("    env  %s=%s" % (k, v))
        for d in c.cdi_devices:
            print("    cdi  %s" % d.name)
        for line in h.log_text().splitlines():
            if "Registered device plugin" in line:
                print("plugin log: " + line.replace(h.tmp, "$DEMO"))

        step("The CDI spec the plugin keeps in /var/run/cdi, as a container runtime reads it")
        gpulet(h, "cdi", "list", "--root", h.root)

        step("gpulet doctor: walk the chain on this node (plugin running)")
        gpulet(h, "doctor", "--root", h.root, "--nvml-library", pl.FAKE_NVML_LIB)

        h.stop_plugin()
        print("\nplugin stopped on SIGTERM (empty device list sent first, sockets removed)")

        step("GPU Feature Discovery labels")
        gpulet(h, "labels", "--oneshot", "--output", "-", "--root", h.root, "--nvml-library", pl.FAKE_NVML_LIB)
    finally:
        h.close()
    print("\nDemo done. Try: gpulet --help")
    return 0


if __name__ == "__main__":
    sys.exit(main())
