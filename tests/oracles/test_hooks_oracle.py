#!/usr/bin/python3
"""NVIDIA's nvidia-cdi-hook (nvidia-container-toolkit v1.20.2, built from its Go module) against
gpulet's cdi-hook inside real containers (podman 4.3 + runc, the harness of
tests/integration/test_cdi_hook_podman.py): NVIDIA's real 535 user-space files as the driver (the
fake NVML in place of its libnvidia-ml, so nvidia-ctk can generate), a fake node's device nodes,
a lib64 glibc container whose loader finds the multiarch driver dir only through ld.so.cache.

nvidia-ctk's spec (hooks run by nvidia-cdi-hook) and gpulet's spec (hooks run by gpulet) each start
the same container, which reports: whether dlopen("libcuda.so.1") works and what the real libcuda
answers, every link path either spec's create-symlinks names (ls -l), the params file the
disable-device-node-modification hook gives (ModifyDeviceFiles), and the ld.so.conf.d drop-ins.
The container must see the same under both (what differs by design is argued in
docs/reference/oracles.md §5).
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oraclelib  # noqa: E402
from test_cdi_hook_podman import (ARCH, PROGRAM, base_rootfs, lib64_rootfs, preflight,  # noqa: E402,F401
                                  run)
from test_cdi_podman import podman_tmpdir  # noqa: E402
from test_cdi_testlib import BUILD, FAKE, GPULET, SRC, check, finish, mkroot  # noqa: E402

LIBDIR = "/usr/lib/" + ARCH


def driver_with_fake_nvml(plain, dest, version):
    """The real driver's plain root (hard links), its libnvidia-ml replaced by the fake NVML."""
    run(["cp", "-al", plain, dest])
    nvml = os.path.join(dest, LIBDIR.lstrip("/"), "libnvidia-ml.so." + version)
    os.unlink(nvml)
    run(["cp", FAKE, nvml])


def links_of(spec):
    hooks = list(spec["containerEdits"].get("hooks", []))
    for d in spec["devices"]:
        hooks += d["containerEdits"].get("hooks", [])
    return sorted({a.split("::")[1] for h in hooks if "create-symlinks" in h["args"] for a in h["args"] if "::" in a})


def spec_of(tool, argv, env, out):
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "%s cdi generate: %s" % (tool, r.stderr.strip()[-1500:]))
    with open(out) as f:
        return json.load(f)


def view(text):
    """What the container reported, as comparable facts."""
    facts = {"dlopen": re.search(r"DLOPEN (OK cuDriverGetVersion=\d+ version=\d+|FAILED)", text or "")}
    facts["dlopen"] = facts["dlopen"].group(0) if facts["dlopen"] else None
    facts["params"] = re.findall(r"ModifyDeviceFiles: \d", text or "")
    facts["paths"] = {}
    for line in (text or "").splitlines():
        m = re.match(r"^([l-])\S+\s.*?\s(/\S+)(?: -> (\S+))?$", line)
        if m:
            facts["paths"][m.group(2)] = m.group(3) or "(file)"
    return facts


def main():
    bins = oraclelib.build_ctk()
    facts = dict(line.split("=", 1) for line in run(
        ["/usr/bin/python3", os.path.join(SRC, "tests/lib/realdriver.py"), "env",
         os.path.join(BUILD, "realdriver")]).split())
    version, plain = facts["REALDRIVER_VERSION"], facts["REALDRIVER_ROOT_PLAIN"]
    with podman_tmpdir("gpulet-hooks-oracle.") as tmp:
        p = preflight(tmp)
        with open(os.path.join(SRC, "tests/fixtures/single-t4.json")) as f:
            fixture = json.load(f)
        fixture["driver_version"], fixture["nvml_version"] = version, "12." + version
        fixture_file = os.path.join(tmp, "t4-real.json")
        with open(fixture_file, "w") as f:
            json.dump(fixture, f)
        node = os.path.join(tmp, "node")
        mkroot(node, fixture_file)
        driver = os.path.join(tmp, "driver")
        driver_with_fake_nvml(plain, driver, version)
        src = os.path.join(tmp, "dlcuda.c")
        with open(src, "w") as f:
            f.write(PROGRAM)
        program = os.path.join(tmp, "dlcuda")
        run([os.environ.get("CC", "cc"), "-O1", "-o", program, src])
        template = os.path.join(tmp, "rootfs-lib64")
        lib64_rootfs(template, program)
        env = {k: v for k, v in os.environ.items() if k not in ("GPULET_NVML_LIBRARY", "NVIDIA_DRIVER_ROOT")}
        env["FAKE_NVML_FIXTURE"] = fixture_file
        common = ["--driver-root", driver, "--dev-root", node, "--format", "json", "--output"]
        seen, links = {}, set()
        for tool in ("nvidia-ctk", "gpulet"):
            p.reset()
            out = os.path.join(p.run_dir, "nvidia.com-gpu.json")
            if tool == "nvidia-ctk":
                spec = spec_of(tool, oraclelib.in_node_proc(node, [bins["nvidia-ctk"], "cdi", "generate",
                                                                   "--nvidia-cdi-hook-path", bins["nvidia-cdi-hook"]]
                                                            + common + [out]), env, out)
            else:
                spec = spec_of(tool, [GPULET, "cdi", "generate", "--nvml-library", FAKE, "--nvidia-cdi-hook-path",
                                      os.path.realpath(GPULET)] + common + [out], env, out)
            links |= set(links_of(spec))
            seen[tool] = spec
        reports = {}
        for tool, spec in seen.items():
            p.reset()
            with open(os.path.join(p.run_dir, "nvidia.com-gpu.json"), "w") as f:
                json.dump(spec, f)
            script = ("/dlcuda; cat /proc/driver/nvidia/params 2>/dev/null; ls /etc/ld.so.conf.d; ls -l %s; true"
                      % " ".join(sorted(links)))
            r = p.run_in(template, ["nvidia.com/gpu=0"], script)
            print("--- %s's spec: rc %d\n%s%s" % (tool, r.returncode, r.stdout, r.stderr[-1500:]))
            check(r.returncode == 0, "%s's spec: the container ran" % tool)
            reports[tool] = view(r.stdout)
        theirs, ours = reports["nvidia-ctk"], reports["gpulet"]
        check(theirs["dlopen"] and theirs["dlopen"].startswith("DLOPEN OK"), "nvidia-cdi-hook: dlopen works: %s" % theirs)
        check(ours["dlopen"] == theirs["dlopen"], "dlopen: nvidia-ctk %r, gpulet %r" % (theirs["dlopen"],
                                                                                         ours["dlopen"]))
        # the hook copies the host's /proc/driver/nvidia/params: where the host has none (no driver
        # loaded here) both leave the container without one
        check(ours["params"] == theirs["params"], "params: nvidia-ctk %r, gpulet %r" % (theirs["params"],
                                                                                      ours["params"]))
        for path in sorted(links):
            a, b = theirs["paths"].get(path), ours["paths"].get(path)
            # a link NVIDIA's hook makes that gpulet's spec mounts instead shows as a file (oracles.md L1)
            same = a == b or (a is not None and b == "(file)")
            check(same, "%s: nvidia-cdi-hook gives %r, gpulet %r" % (path, a, b))
        print("paths compared: %d; dlopen: %s" % (len(links), ours["dlopen"]))
    return finish("in a real container, gpulet's spec and hooks give what nvidia-ctk's spec and nvidia-cdi-hook "
                  "%s give" % oraclelib.CTK[2])


if __name__ == "__main__":
    sys.exit(main())
