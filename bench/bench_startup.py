#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Start-up cost of the verbs that serve nothing (issue 16.3): `gpulet --help`, `cdi generate` on the
8-GPU dgx-a100 fake root, `doctor` on the healthy dgx-a100 node (tests/scenarios healthy base), each as
a ratio to /bin/true's exec measured in the same run (interleaved, so both see the same load), plus
absolute wall and CPU times and the shared objects the process maps (LD_DEBUG=files).
Goals: cdi generate <= 20 ms, doctor <= 100 ms on a quiet machine.

usage: bench/bench_startup.py [RUNS] [OTHER_GPULET]
  OTHER_GPULET: a second binary measured in the same run (for example a build of the previous commit),
  its rows are marked "other". Env GPULET, FAKE_NVML_LIB as for the tests. Prints; asserts nothing."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "scenarios"))
import run as scen  # noqa: E402  (the scenario runner's node builder)

GPULET = os.environ.get("GPULET") or os.path.join(SRC, "build", "gpulet")
FAKE = os.environ.get("FAKE_NVML_LIB") or os.path.join(SRC, "build", "fakenvml", "libnvidia-ml.so.1")
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
OTHER = sys.argv[2] if len(sys.argv) > 2 else None
FIXTURE = os.path.join(SRC, "tests", "fixtures", "dgx-a100.json")


def spawn(argv, env):
    """(wall ms, CPU ms) of one run; posix_spawn keeps the launcher's own cost small (its vfork also makes
    the child's ru_maxrss the launcher's, so memory is measured by bench_pss.py instead)."""
    t = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                                             (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
    _, status, ru = os.wait4(pid, 0)
    wall = (time.perf_counter() - t) * 1000
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"{argv} exited {os.waitstatus_to_exitcode(status)}")
    return wall, (ru.ru_utime + ru.ru_stime) * 1000


def libraries(argv, env):
    """Shared objects the dynamic linker loads for this run, dlopen'd ones included (vdso excluded)."""
    p = subprocess.run(argv, env=dict(env, LD_DEBUG="files"), capture_output=True, text=True)
    return sorted({line.split("file=")[1].split()[0] for line in p.stderr.splitlines()
                   if "generating link map" in line})


def rows_for(binary, root, out):
    pods = os.path.join(SRC, "tests", "scenarios", "healthy-dgx-a100", "pods.json")
    return [
        ("gpulet --help", [binary, "--help"]),
        ("cdi generate dgx-a100", [binary, "cdi", "generate", "--root", root, "--nvml-library", FAKE, "--format",
                                   "json", "--output", out]),
        ("doctor healthy dgx-a100", [binary, "doctor", "--root", root, "--json", "--nvml-library", FAKE, "--pods",
                                     pods, "--cuda-version", "12.4"]),
    ]


def main():
    tmp = tempfile.mkdtemp(prefix="bench-startup-")
    try:
        root = os.path.join(tmp, "root")
        fixture = json.load(open(FIXTURE))
        subprocess.run([os.path.join(SRC, "tests", "lib", "mkroot.sh"), root, "dgx-a100"], check=True,
                       capture_output=True)
        scen.healthy(root, fixture)
        env = dict(os.environ, FAKE_NVML_FIXTURE=FIXTURE)
        out = os.path.join(tmp, "spec.json")
        rows = [("/bin/true", ["/bin/true"], "")] + [(n, a, "") for n, a in rows_for(GPULET, root, out)]
        if OTHER:
            rows += [(n, a, "other") for n, a in rows_for(os.path.abspath(OTHER), root, out)]
        for _, argv, _ in rows:  # warm the page cache; doctor must pass on the healthy node
            p = subprocess.run(argv, env=env, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"{argv} failed rc={p.returncode}: {p.stdout[-400:]} {p.stderr[-400:]}")
        res = {i: ([], []) for i in range(len(rows))}
        for _ in range(RUNS):
            for i, (_, argv, _) in enumerate(rows):
                for lst, v in zip(res[i], spawn(argv, env)):
                    lst.append(v)
        floor = statistics.median(res[0][0])
        floor_cpu = statistics.median(res[0][1])
        print(f"{RUNS} interleaved runs; binary {GPULET}" + (f", other {OTHER}" if OTHER else ""))
        print(f"{'':34} {'wall ms':>8} {'min':>7} {'x true':>7} {'cpu ms':>7} {'x true':>7} {'libs':>5}")
        for i, (name, argv, tag) in enumerate(rows):
            wall, cpu = res[i]
            w, c = statistics.median(wall), statistics.median(cpu)
            libs = len(libraries(argv, env))
            print(f"{(tag + ' ' if tag else '') + name:34} {w:8.2f} {min(wall):7.2f} {w / floor:7.1f} {c:7.2f} "
                  f"{c / max(floor_cpu, 0.01):7.1f} {libs:5d}")
        for i, (name, _, tag) in enumerate(rows):
            goal = 20 if name.startswith("cdi") else 100 if name.startswith("doctor") else None
            if goal and not tag:
                w = statistics.median(res[i][0])
                print(f"goal {name} <= {goal} ms: {'met' if w <= goal else 'NOT met'} ({w:.2f} ms)")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
