#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Whole `gpulet doctor` run on the healthy dgx-a100 scenario (fake NVML, 8 GPUs with MIG, containerd
config + imports, CDI spec, kubelet checkpoint, kernel log), against a floor measured in the same
run: exec of `gpulet --help` (process start + dynamic linking, no work). Goal: doctor < 100 ms.
Usage: bench_doctor.py [RUNS]   (env GPULET, FAKE_NVML_LIB as for the tests)"""
import os, statistics, subprocess, sys, tempfile, time, shutil

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "scenarios"))
import run as scen  # noqa: E402  (the scenario runner's node builder)

GPULET = os.environ.get("GPULET") or os.path.join(SRC, "build", "gpulet")
FAKE = os.environ.get("FAKE_NVML_LIB") or os.path.join(SRC, "build", "fakenvml", "libnvidia-ml.so.1")
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 30


def timed(cmd, env, cpu):
    """Wall ms; CPU ms (user+sys of the child, less sensitive to a loaded machine) appended to cpu."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    cpu.append((ru.ru_utime + ru.ru_stime) * 1000)
    return (time.perf_counter() - t) * 1000


tmp = tempfile.mkdtemp(prefix="bench-")
try:
    import json
    root = os.path.join(tmp, "root")
    fixture = json.load(open(os.path.join(SRC, "tests", "fixtures", "dgx-a100.json")))
    subprocess.run([os.path.join(SRC, "tests", "lib", "mkroot.sh"), root, "dgx-a100"], check=True, capture_output=True)
    scen.healthy(root, fixture)
    env = dict(os.environ, FAKE_NVML_FIXTURE=os.path.join(SRC, "tests", "fixtures", "dgx-a100.json"))
    doctor = [GPULET, "doctor", "--root", root, "--json", "--nvml-library", FAKE,
              "--pods", os.path.join(SRC, "tests", "scenarios", "healthy-dgx-a100", "pods.json"), "--cuda-version", "12.4"]
    p = subprocess.run(doctor, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"doctor on the healthy dgx-a100 node should pass, rc={p.returncode}: {p.stdout[-500:]}")
    floor, work, floor_cpu, work_cpu = [], [], [], []
    for _ in range(RUNS):  # interleaved so both see the same machine load
        floor.append(timed([GPULET, "--help"], env, floor_cpu))
        work.append(timed(doctor, env, work_cpu))
    f, w = statistics.median(floor), statistics.median(work)
    print(f"floor  gpulet --help          median {f:7.2f} ms  (min {min(floor):.2f})")
    print(f"doctor dgx-a100 healthy node  median {w:7.2f} ms  (min {min(work):.2f}, p90 "
          f"{sorted(work)[int(len(work) * 0.9) - 1]:.2f})")
    fc, wc = statistics.median(floor_cpu), statistics.median(work_cpu)
    print(f"cpu    floor {fc:.2f} ms, doctor {wc:.2f} ms: ratio {wc / fc:.1f}x, doctor's own work {wc - fc:.2f} ms")
    print(f"ratio doctor/floor: {w / f:.1f}x; doctor minus floor: {w - f:.2f} ms; goal < 100 ms: "
          f"{'met' if w < 100 else 'NOT met'} ({RUNS} runs)")
finally:
    shutil.rmtree(tmp)
