#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Memory of `gpulet plugin` serving the 8 GPUs of the dgx-a100 fake node (issue 16.5, goal PSS <= 10 MiB),
registered with the kubelet stand-in and its ListAndWatch streams open, then after N Allocate calls.

PSS counts a page shared by N processes as 1/N, so it depends on who else maps the same files. On this
machine every process shares libc with the whole system; in a pod, the plugin's libraries come from the
image, shared only with gpulet's other containers on the node. So the plugin runs from a private copy
of gpulet, its modules and every library they load (an "image": LD_LIBRARY_PATH), measured
  - alone (nothing else maps the image's files: PSS = RSS), and
  - next to its siblings from the same image, as the chart deploys them on a GPU node by default
    (deploy/helm/gpulet/values.yaml: exporter.enabled, doctor.enabled with doctor.live): `gpulet exporter`
    and `gpulet doctor --serve-metrics --live`, the doctor dialling the plugin's and kubelet's sockets;
  - and with `gpulet labels` as well (gfd.enabled, off by default as in NVIDIA's chart);
with where it goes (/proc/PID/smaps grouped: gpulet and its modules, each library, heap, thread stacks
and malloc arenas), and the PSS of /bin/sleep as the floor measured in the same run.
usage: bench/bench_pss.py [ALLOCATES] [OTHER_GPULET]   (OTHER_GPULET: e.g. a build of the previous commit,
measured the same way; env GPULET, FAKE_NVML_LIB as for the tests). Prints; asserts nothing."""
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import plugin_lib  # noqa: E402

ALLOCATES = int(sys.argv[1]) if len(sys.argv) > 1 else 200
OTHER = sys.argv[2] if len(sys.argv) > 2 else None
FIXTURE = os.path.join(SRC, "tests", "fixtures", "dgx-a100.json")


def rollup(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            k, _, v = line.partition(":")
            if v.strip().endswith("kB"):
                out[k] = int(v.split()[0])
    return out


def breakdown(pid):
    """PSS kB per mapping group."""
    groups = collections.Counter()
    name = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if len(head) >= 5 and "-" in head[0] and not line[0].isupper():
                path = head[5] if len(head) > 5 else ""
                name = os.path.basename(path) if path.startswith("/") else (path or "anon (thread stacks, arenas)")
            elif line.startswith("Pss:"):
                groups[name] += int(line.split()[1])
    return groups


def shares_grpc(pid):
    with open(f"/proc/{pid}/maps") as f:
        return any("libgrpc.so" in line for line in f)


def image(binary, dest):
    """Copy binary, the modules next to it and every library they load into dest/bin and dest/lib."""
    bindir, libdir = os.path.join(dest, "bin"), os.path.join(dest, "lib")
    os.makedirs(bindir)
    os.makedirs(libdir)
    src_dir = os.path.dirname(os.path.abspath(binary))
    files = [os.path.abspath(binary)] + [os.path.join(src_dir, m) for m in ("gpulet-grpc.so", "gpulet-http.so")
                                         if os.path.exists(os.path.join(src_dir, m))]
    for f in files:
        shutil.copy(f, os.path.join(bindir, os.path.basename(f) if f != files[0] else "gpulet"))
        for line in subprocess.run(["ldd", f], capture_output=True, text=True).stdout.splitlines():
            parts = line.split()
            if "=>" in parts and parts[2].startswith("/") and not os.path.exists(os.path.join(libdir, parts[0])):
                shutil.copy(parts[2], os.path.join(libdir, parts[0]))
    return os.path.join(bindir, "gpulet"), libdir


def measure(label, gpulet, libdir, floor_pid):
    plugin_lib.GPULET = gpulet
    h = plugin_lib.Harness("dgx-a100")
    siblings = []
    try:
        # the kubelet dir inside the node root, where the doctor's --live looks for the sockets
        h.dp = os.path.join(h.root, "var", "lib", "kubelet", "device-plugins")
        os.makedirs(h.dp, exist_ok=True)
        h.start_standin()
        env = h.plugin_env({"LD_LIBRARY_PATH": libdir})
        h.start_plugin(env={"LD_LIBRARY_PATH": libdir})  # mig-strategy none: the 8 GPUs as nvidia.com/gpu
        ids = [d["id"] for d in h.wait_list("nvidia.com/gpu")["devices"]]
        for i in range(ALLOCATES):
            h.allocate("nvidia.com/gpu", [ids[i % len(ids)]])
        time.sleep(0.3)
        pid = h.plugin.pid
        alone = rollup(pid)
        groups = breakdown(pid)
        nv = ["--nvml-library", plugin_lib.FAKE_NVML_LIB, "--root", h.root]
        log = open(os.path.join(h.tmp, "siblings.log"), "a")
        chart = ([gpulet, "exporter", "--address", "127.0.0.1:0", "--kubernetes=false", *nv],
                 [gpulet, "doctor", "--serve-metrics", "127.0.0.1:0", "--live", "--interval", "1", *nv])
        gfd = ([gpulet, "labels", "--output-file", "-", "--sleep-interval", "1h", *nv],)
        states = []
        for argvs in (chart, gfd):
            for argv in argvs:
                siblings.append(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log))
            time.sleep(2.5)  # the doctor has checked (and dialled the sockets) at least once
            states.append((rollup(pid), sum(p.poll() is None for p in siblings),
                           sum(shares_grpc(p.pid) for p in siblings if p.poll() is None)))
        floor = rollup(floor_pid)["Pss"]
        print(f"{label}: {len(ids)} GPUs, {len(os.listdir(f'/proc/{pid}/task'))} threads, after {ALLOCATES} Allocate")
        print(f"  alone from its image:     PSS {alone['Pss'] / 1024:6.2f} MiB (anon {alone.get('Pss_Anon', 0) / 1024:.2f}, "
              f"file {alone.get('Pss_File', 0) / 1024:.2f}), {alone['Pss'] / floor:.0f}x /bin/sleep's {floor / 1024:.2f}")
        for (r, alive, grpc), what in zip(states, ("chart default: exporter, doctor", "and labels (gfd.enabled)")):
            print(f"  with {alive} siblings ({what}; {grpc} map libgrpc): PSS {r['Pss'] / 1024:6.2f} MiB (anon "
                  f"{r.get('Pss_Anon', 0) / 1024:.2f}, file {r.get('Pss_File', 0) / 1024:.2f})")
        for name, kb in groups.most_common(12):
            print(f"    {kb:6d} kB  {name}")
        with_sib = states[0][0]
        return alone["Pss"], with_sib["Pss"]
    finally:
        for p in siblings:
            p.kill()
            p.wait()
        h.close()


def main():
    sleeper = subprocess.Popen(["/bin/sleep", "300"])
    tmp = tempfile.mkdtemp(prefix="bench-pss-")
    try:
        rows = [("gpulet", os.environ.get("GPULET") or os.path.join(SRC, "build", "gpulet"))]
        if OTHER:
            rows.append(("other", OTHER))
        res = {}
        for i, (label, binary) in enumerate(rows):
            g, libdir = image(binary, os.path.join(tmp, str(i)))
            res[label] = measure(label, g, libdir, sleeper.pid)
        a, s = res["gpulet"]
        print(f"goal PSS <= 10 MiB: alone {'met' if a <= 10240 else 'NOT met'} ({a / 1024:.2f}), with the chart's "
              f"default siblings {'met' if s <= 10240 else 'NOT met'} ({s / 1024:.2f})")
    finally:
        sleeper.kill()
        sleeper.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
