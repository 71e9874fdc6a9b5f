#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The fake NVML answers like NVIDIA's real 535 library wherever both can be compared without a GPU.

Each library is loaded in its own process (ctypes) on a node without the kernel module (the fake:
a fixture whose init_error is DRIVER_NOT_LOADED, like tests/fixtures/no-driver) and asked the same
questions: nvmlErrorString of every code, the calls before nvmlInit_v2 (nvmlShutdown,
nvmlSystemGetNVMLVersion and its argument checks, the calls that need init), nvmlInit_v2, and the
calls after the failed init. Every answer must be the same. Facts: docs/reference/real-driver.md.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

CODES = list(range(-1, 41)) + [998, 999, 1000]


def observe(path):
    lib = ctypes.CDLL(path)
    lib.nvmlErrorString.restype = ctypes.c_char_p
    lib.nvmlErrorString.argtypes = [ctypes.c_int]
    buf = ctypes.create_string_buffer(96)
    u, i = ctypes.c_uint(), ctypes.c_int()
    out = {"errorString": {c: lib.nvmlErrorString(c).decode() for c in CODES}}

    def calls(when):
        out[when + ": nvmlSystemGetNVMLVersion(buf, 96)"] = lib.nvmlSystemGetNVMLVersion(buf, 96)
        out[when + ": NVML version"] = buf.value.decode()
        out[when + ": nvmlSystemGetNVMLVersion(buf, 2)"] = lib.nvmlSystemGetNVMLVersion(buf, 2)
        out[when + ": nvmlSystemGetNVMLVersion(NULL, 96)"] = lib.nvmlSystemGetNVMLVersion(None, 96)
        out[when + ": nvmlSystemGetDriverVersion"] = lib.nvmlSystemGetDriverVersion(buf, 96)
        out[when + ": nvmlSystemGetCudaDriverVersion"] = lib.nvmlSystemGetCudaDriverVersion(ctypes.byref(i))
        out[when + ": nvmlDeviceGetCount_v2"] = lib.nvmlDeviceGetCount_v2(ctypes.byref(u))
        out[when + ": nvmlShutdown"] = lib.nvmlShutdown()

    calls("before init")
    out["nvmlInit_v2"] = lib.nvmlInit_v2()
    calls("after the failed init")
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--observe":
        print(json.dumps(observe(sys.argv[2])))
        return 0
    build = os.environ["GPULET_BUILD"]
    env = dict(line.split("=", 1) for line in subprocess.run(
        ["/usr/bin/python3", os.path.join(os.environ["GPULET_SRC"], "tests/lib/realdriver.py"), "env",
         os.path.join(build, "realdriver")], capture_output=True, text=True, check=True).stdout.split())
    real_lib, version = env["REALDRIVER_NVML"], env["REALDRIVER_VERSION"]
    if not os.path.exists(real_lib):
        print(f"FAIL: {real_lib} missing: the realdriver_setup fixture failed", file=sys.stderr)
        return 1
    with tempfile.NamedTemporaryFile("w", suffix=".json") as fx:
        json.dump({"init_error": "DRIVER_NOT_LOADED", "driver_version": version, "nvml_version": "12." + version,
                   "gpus": []}, fx)
        fx.flush()
        answers = {}
        for name, lib in (("real", real_lib), ("fake", os.path.join(build, "fakenvml/libnvidia-ml.so.1"))):
            p = subprocess.run([sys.executable, __file__, "--observe", lib], capture_output=True, text=True,
                               env=dict(os.environ, FAKE_NVML_FIXTURE=fx.name))
            if p.returncode != 0:
                print(f"FAIL: observing {name} ({lib}): {p.stderr}", file=sys.stderr)
                return 1
            answers[name] = json.loads(p.stdout)
    real, fake = answers["real"], answers["fake"]
    bad = 0
    for key in real:
        if key == "errorString":
            for code, text in real[key].items():
                if fake[key][code] != text:
                    print(f"FAIL: nvmlErrorString({code}): real {text!r}, fake {fake[key][code]!r}")
                    bad += 1
        elif real[key] != fake[key]:
            print(f"FAIL: {key}: real {real[key]!r}, fake {fake[key]!r}")
            bad += 1
    print(f"{len(real) - 1} calls and {len(CODES)} error strings compared; {bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
