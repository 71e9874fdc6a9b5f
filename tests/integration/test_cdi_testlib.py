#!/usr/bin/python3
"""Helpers shared by the CDI integration tests (not a test itself): paths from CTest's environment,
the fixture list, fake node roots, running gpulet, and failure bookkeeping."""
import glob
import json
import os
import subprocess

SRC = os.environ["GPULET_SRC"]
BUILD = os.environ["GPULET_BUILD"]
GPULET = os.environ["GPULET"]
FAKE = os.environ["FAKE_NVML_LIB"]
FIXTURES = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(SRC, "tests/fixtures/*.json")))
failures = []
# Config files: host path in the root -> where nvidia-ctk mounts it (graphics.go: the EGL files under
# /usr/share, the OpenCL ICD and the Vulkan files under /etc, found in /etc, /usr/local/share or /usr/share).
CONFIG_FILES = {
    "/usr/share/glvnd/egl_vendor.d/10_nvidia.json": "/usr/share/glvnd/egl_vendor.d/10_nvidia.json",
    "/usr/share/egl/egl_external_platform.d/10_nvidia_wayland.json":
        "/usr/share/egl/egl_external_platform.d/10_nvidia_wayland.json",
    "/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json":
        "/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json",
    "/etc/OpenCL/vendors/nvidia.icd": "/etc/OpenCL/vendors/nvidia.icd",
    "/etc/vulkan/icd.d/nvidia_icd.json": "/etc/vulkan/icd.d/nvidia_icd.json",
    "/usr/share/vulkan/icd.d/nvidia_icd.json": "/etc/vulkan/icd.d/nvidia_icd.json",
    "/etc/vulkan/implicit_layer.d/nvidia_layers.json": "/etc/vulkan/implicit_layer.d/nvidia_layers.json",
    "/usr/share/vulkan/implicit_layer.d/nvidia_layers.json": "/etc/vulkan/implicit_layer.d/nvidia_layers.json",
}
# Libraries without the driver version in the name (driver-nvml.go, graphics.go): name prefix, and
# whether only a file with its own X.Y version counts (the SONAME link resolves to it).
UNVERSIONED = [("libnvidia-nvvm70.so.", False), ("libnvidia-egl-gbm.so.", True), ("libnvidia-egl-wayland.so.", True),
               ("libnvidia-egl-wayland2.so.", True), ("libnvidia-egl-xcb.so.", True), ("libnvidia-egl-xlib.so.", True)]

# The hook binary the CDI tests write into specs (cdi generate's default is the running gpulet, whose
# path differs per build): stable in the goldens, and present in every fake root so validate finds it.
HOOK = "/usr/bin/gpulet"


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def finish(ok_message):
    """Exit status for main(): 1 with a count when anything failed."""
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok:", ok_message)
    return 0


def fixture_path(name):
    return os.path.join(SRC, "tests/fixtures", name + ".json")


def load_fixture(name):
    with open(fixture_path(name)) as f:
        return json.load(f)


def mkroot(dest, fixture, host_view=False, options=()):
    """A fake node root (tests/lib/mkroot.sh). host_view: also make the root readable at its own
    absolute path inside itself (<dest><dest> -> <dest>), so `--root DEST --driver-root DEST` reads
    the same tree while the spec's host paths point at its real device nodes and files, as a
    runtime on this machine will open them (like /run/nvidia/driver on a real node)."""
    subprocess.run(["sh", os.path.join(SRC, "tests/lib/mkroot.sh"), dest, fixture] + list(options), check=True,
                   capture_output=True, env=dict(os.environ, GPULET_BUILD=BUILD))
    os.makedirs(os.path.dirname(os.path.join(dest, HOOK.lstrip("/"))), exist_ok=True)
    with open(os.path.join(dest, HOOK.lstrip("/")), "w") as f:
        os.fchmod(f.fileno(), 0o755)
    if host_view:
        os.makedirs(os.path.dirname(dest + dest), exist_ok=True)
        os.symlink(dest, dest + dest)


def generate(fixture, root, args, env=None):
    """gpulet cdi generate against the fake NVML answering from fixture (hooks run by HOOK unless args say)."""
    env = dict(env or os.environ, FAKE_NVML_FIXTURE=fixture_path(fixture))
    hook = [] if "--nvidia-cdi-hook-path" in args else ["--nvidia-cdi-hook-path", HOOK]
    return subprocess.run([GPULET, "cdi", "generate", "--nvml-library", FAKE, "--root", root] + hook + args, env=env,
                          capture_output=True, text=True, timeout=60)


def gpulet(args):
    return subprocess.run([GPULET] + args, capture_output=True, text=True, timeout=60)
