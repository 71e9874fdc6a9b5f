#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet cdi generate` on NVIDIA's real 535 driver roots (tests/lib/realdriver.py): Debian's layout
and the plain one. The GPU comes from the fake NVML (a T4 with driver 535.261.03, as no GPU is
here); every file comes from the real packages.

Two checks per root:
  - the spec, with the root's path written as {driverRoot}, is byte-identical to
    tests/golden/cdi/real535-<layout>.json (GPULET_UPDATE_GOLDEN=1 rewrites it);
  - every library, binary and ICD/config file of nvidia-ctk's lists (docs/reference/cdi.md §7.4,
    §7.5) that the packages contain is mounted, except the ones named in KNOWN_MISSING, which
    issue 13 adds to the discovery tables. A file found that is listed there fails too, so the
    list shrinks as discovery grows.
"""
import json
import os
import subprocess
import sys
import tempfile

SRC = os.environ["GPULET_SRC"]
BUILD = os.environ["GPULET_BUILD"]
GPULET = os.environ.get("GPULET") or os.path.join(BUILD, "gpulet")
FAKE = os.environ.get("FAKE_NVML_LIB") or os.path.join(BUILD, "fakenvml/libnvidia-ml.so.1")
GOLDEN = os.path.join(SRC, "tests/golden/cdi")
UPDATE = os.environ.get("GPULET_UPDATE_GOLDEN") == "1"

# nvidia-ctk's binaries (internal/discover, cdi.md §7.5) and config files it mounts (§7.5; Debian
# installs the Vulkan files under /usr/share, where nvidia-ctk's locator also looks).
BINARIES = ["nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
            "nvidia-cuda-mps-server", "nvidia-imex", "nvidia-imex-ctl"]
BIN_DIRS = ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"]
CONFIG_FILES = ["/usr/share/glvnd/egl_vendor.d/10_nvidia.json", "/etc/OpenCL/vendors/nvidia.icd",
                "/etc/vulkan/icd.d/nvidia_icd.json", "/usr/share/vulkan/icd.d/nvidia_icd.json",
                "/etc/vulkan/implicit_layer.d/nvidia_layers.json",
                "/usr/share/vulkan/implicit_layer.d/nvidia_layers.json"]
# What today's discovery does not mount: ICD and config files are not discovered at all (issue 13).
KNOWN_MISSING = ["/etc/OpenCL/vendors/nvidia.icd", "/usr/share/glvnd/egl_vendor.d/10_nvidia.json",
                 "/usr/share/vulkan/icd.d/nvidia_icd.json", "/usr/share/vulkan/implicit_layer.d/nvidia_layers.json"]
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def expected(root, version):
    """Container paths nvidia-ctk would mount from this root: every lib*.so.<version> file, the
    listed binaries (the first bin dir holding each) and config files."""
    want = []
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if f.startswith("lib") and f.endswith(".so." + version) and os.path.isfile(p) and not os.path.islink(p):
                want.append("/" + os.path.relpath(p, root))
    for b in BINARIES:
        for d in BIN_DIRS:
            if os.path.lexists(os.path.join(root, d.lstrip("/"), b)):
                want.append(f"{d}/{b}")
                break
    want += [c for c in CONFIG_FILES if os.path.lexists(os.path.join(root, c.lstrip("/")))]
    return sorted(want)


def main():
    out = subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tests/lib/realdriver.py"), "env",
                          os.path.join(BUILD, "realdriver")], capture_output=True, text=True, check=True).stdout
    facts = dict(line.split("=", 1) for line in out.split())
    version = facts["REALDRIVER_VERSION"]
    with open(os.path.join(SRC, "tests/fixtures/single-t4.json")) as f:
        fixture = json.load(f)
    fixture["driver_version"], fixture["nvml_version"] = version, "12." + version
    with tempfile.NamedTemporaryFile("w", suffix=".json") as fx:
        json.dump(fixture, fx)
        fx.flush()
        for layout in ("debian", "plain"):
            root = facts["REALDRIVER_ROOT_" + layout.upper()]
            if not os.path.isdir(root):
                check(False, f"{root} missing: the realdriver_setup fixture failed")
                continue
            env = {k: v for k, v in os.environ.items() if k not in ("GPULET_NVML_LIBRARY", "NVIDIA_DRIVER_ROOT")}
            p = subprocess.run([GPULET, "cdi", "generate", f"--driver-root={root}", f"--nvml-library={FAKE}",
                                "--nvidia-cdi-hook-path=/usr/bin/gpulet", "--format=json", "--output=-"], capture_output=True, text=True,
                               env=dict(env, FAKE_NVML_FIXTURE=fx.name))
            check(p.returncode == 0, f"{layout}: cdi generate exit {p.returncode} {p.stderr.strip()}")
            if p.returncode != 0:
                continue
            spec = p.stdout.replace(root, "{driverRoot}").replace(version, "{driverVersion}")
            golden = os.path.join(GOLDEN, f"real535-{layout}.json")
            if UPDATE:
                with open(golden, "w") as f:
                    f.write(spec)
            with open(golden) as f:
                check(f.read() == spec, f"{layout}: spec equals {os.path.relpath(golden, SRC)}")
            real = json.loads(p.stdout.replace(root, "{driverRoot}"))
            mounts = {m["containerPath"] for m in real["containerEdits"].get("mounts", [])}
            want = expected(root, version)
            missing = [w for w in want if w not in mounts]
            print(f"{layout}: {len(want)} files of nvidia-ctk's lists in the packages, "
                  f"{len(want) - len(missing)} mounted; missing: {' '.join(missing) or 'none'}")
            check(missing == KNOWN_MISSING, f"{layout}: missing exactly the known (issue 13) ones")
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
