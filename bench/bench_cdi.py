#!/usr/bin/python3
"""Benchmark: `gpulet cdi generate` for the 8-GPU dgx-a100 fixture root (tests/lib/mkroot.sh: every
driver library of the known list with SONAME and dev links, a real ld.so.cache, firmware, tools,
sockets, MIG on two GPUs). Reports the median and p90 wall time and the peak RSS, and the same for
two floors measured in the same run: exec of /bin/true and of `gpulet --help`. Goals (issue 4):
under 20 ms and under 5 MiB. Not a test: it prints, it does not assert.

usage: cmake --build build --target bench_cdi && bench/bench_cdi.py [BUILD_DIR] [ITERATIONS]
"""
import os
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(SRC, "build"))
N = int(sys.argv[2]) if len(sys.argv) > 2 else 50
GPULET = os.path.join(BUILD, "gpulet")
FAKE = os.path.join(BUILD, "fakenvml/libnvidia-ml.so.1")
TIMER = os.path.join(BUILD, "bench_cdi")
FIXTURE = os.path.join(SRC, "tests/fixtures/dgx-a100.json")


def measure(argv, env):
    """(median s, p90 s, peak RSS KiB, median CPU s) of N runs, timed by bench_cdi (a small C launcher, so the
    child's RSS is its own and not a forked interpreter's)."""
    r = subprocess.run([TIMER, str(N)] + argv, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{argv} failed: {r.stderr}")
    med, p90, rss, cpu = map(int, r.stdout.split())
    return med / 1e6, p90 / 1e6, rss, cpu / 1e6


def main():
    for f in (GPULET, FAKE, TIMER):
        if not os.path.exists(f):
            sys.exit(f"{f} missing: build first (cmake --build {BUILD} --target gpulet fakenvml bench_cdi)")
    with tempfile.TemporaryDirectory(prefix="gpulet-bench-cdi.") as tmp:
        root = os.path.join(tmp, "node")
        subprocess.run(["sh", os.path.join(SRC, "tests/lib/mkroot.sh"), root, "dgx-a100"], check=True,
                       env=dict(os.environ, GPULET_BUILD=BUILD))
        env = dict(os.environ, FAKE_NVML_FIXTURE=FIXTURE)
        out = os.path.join(tmp, "out")
        os.makedirs(out)
        gen = [GPULET, "cdi", "generate", "--root", root, "--nvml-library", FAKE, "--format", "json"]
        spec = subprocess.run(gen, env=env, capture_output=True, text=True, check=True).stdout
        n_mounts, n_devices = spec.count('"containerPath"'), spec.count('"name"')
        rows = [
            ("/bin/true", ["/bin/true"]),
            ("gpulet --help", [GPULET, "--help"]),
            ("cdi generate > stdout (json)", gen),
            ("cdi generate --output DIR", gen + ["--output", out + "/"]),
            ("cdi generate (yaml)", gen[:-1] + ["yaml"]),
            ("cdi validate FILE --root",
             [GPULET, "cdi", "validate", "--root", root, os.path.join(out, "nvidia.com-gpu.json")]),
        ]
        res = {name: measure(argv, env) for name, argv in rows}
        r = subprocess.run([TIMER, "--in-process", str(N), root, FAKE], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"in-process run failed: {r.stderr}")
        load_us, gen_us, nbytes = map(int, r.stdout.split())
    true_t, help_t = res["/bin/true"][0], res["gpulet --help"][0]
    print(f"gpulet cdi benchmark: dgx-a100 (8 GPUs, 7 MIG instances), {n_devices} devices, {n_mounts} mounts, "
          f"{N} runs each")
    print(f"{'command':30} {'wall ms':>8} {'p90 ms':>7} {'CPU ms':>7} {'RSS MiB':>8} {'wall x true':>11} "
          f"{'wall x help':>11} {'CPU-help ms':>11}")
    for name, _ in rows:
        med, p90, rss, cpu = res[name]
        print(f"{name:30} {med * 1e3:8.2f} {p90 * 1e3:7.2f} {cpu * 1e3:7.2f} {rss / 1024:8.2f} {med / true_t:11.1f} "
              f"{med / help_t:11.1f} {(cpu - res['gpulet --help'][3]) * 1e3:11.2f}")
    print(f"in process (no exec, NVML already open): node_load {load_us / 1e3:.2f} ms, "
          f"cdi_generate + JSON {gen_us / 1e3:.2f} ms for a {nbytes}-byte spec")
    med, _, rss, cpu = res["cdi generate --output DIR"]
    print(f"goal: generate < 20 ms and < 5 MiB: wall {med * 1e3:.2f} ms (floor /bin/true {true_t * 1e3:.2f} ms), "
          f"CPU {cpu * 1e3:.2f} ms, peak RSS {rss / 1024:.2f} MiB")


if __name__ == "__main__":
    main()
