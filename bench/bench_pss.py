#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Memory of `gpulet plugin` serving the 8 GPUs of the dgx-a100 fake node (issue 16.5, goal PSS <= 10 MiB),
registered with the kubelet stand-in and its ListAndWatch streams open, read from /proc/PID/smaps_rollup,
with where it goes (/proc/PID/smaps grouped: gpulet and its modules, each other library, heap, thread
stacks and malloc arenas, the rest; PSS here, and RSS: the PSS it has alone in its container, where no other
process maps the same files) and, as the floor measured in the same run, the PSS of /bin/sleep.
Also after N Allocate calls (the heap after serving). Prints; asserts nothing.
usage: bench/bench_pss.py [ALLOCATES]   (env GPULET, FAKE_NVML_LIB as for the tests)"""
import collections
import os
import subprocess
import sys
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from plugin_lib import Harness  # noqa: E402

ALLOCATES = int(sys.argv[1]) if len(sys.argv) > 1 else 200


def rollup(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            k, _, v = line.partition(":")
            if v.strip().endswith("kB"):
                out[k] = int(v.split()[0])
    return out


def breakdown(pid):
    """(PSS, RSS) kB per mapping group."""
    groups, rss = collections.Counter(), collections.Counter()
    name = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if len(head) >= 5 and "-" in head[0] and not line.startswith(tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")):
                path = head[5] if len(head) > 5 else ""
                name = os.path.basename(path) if path.startswith("/") else (path or "anon (thread stacks, arenas)")
                if name.startswith("gpulet"):
                    name = "gpulet: " + name
            elif line.startswith("Pss:"):
                groups[name] += int(line.split()[1])
            elif line.startswith("Rss:"):
                rss[name] += int(line.split()[1])
    return groups, rss


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def main():
    h = Harness("dgx-a100")
    sleeper = subprocess.Popen(["/bin/sleep", "60"])
    try:
        h.start_standin()
        h.start_plugin()  # mig-strategy none: the 8 GPUs as nvidia.com/gpu
        devs = h.wait_list("nvidia.com/gpu")["devices"]
        time.sleep(0.5)
        pid = h.plugin.pid
        floor = rollup(sleeper.pid)["Pss"]
        r = rollup(pid)
        print(f"plugin serving {len(devs)} GPUs, {threads(pid)} threads: PSS {r['Pss'] / 1024:.2f} MiB "
              f"(RSS {r['Rss'] / 1024:.2f} MiB, anon {r.get('Pss_Anon', 0) / 1024:.2f}, "
              f"file {r.get('Pss_File', 0) / 1024:.2f}); floor /bin/sleep PSS {floor / 1024:.2f} MiB, "
              f"ratio {r['Pss'] / floor:.1f}x")
        pss, rss = breakdown(pid)
        print("  (PSS counts a page shared with N processes as 1/N: on this shared machine other processes map the")
        print("   same libraries; in the pod's container nothing else does, so its PSS is the RSS column)")
        print("      PSS kB   RSS kB")
        for name, kb in rss.most_common(16):
            print(f"  {pss[name]:9d} {kb:8d}  {name}")
        ids = [d["id"] for d in devs]
        for i in range(ALLOCATES):
            h.allocate("nvidia.com/gpu", [ids[i % len(ids)]])
        r2 = rollup(pid)
        print(f"after {ALLOCATES} Allocate calls: PSS {r2['Pss'] / 1024:.2f} MiB (anon {r2.get('Pss_Anon', 0) / 1024:.2f})")
        alone = max(r["Rss"], r2["Rss"])
        print(f"goal PSS <= 10 MiB: here {'met' if max(r['Pss'], r2['Pss']) <= 10 * 1024 else 'NOT met'}; alone in a "
              f"container (PSS = RSS {alone / 1024:.2f} MiB) {'met' if alone <= 10 * 1024 else 'NOT met'}")
    finally:
        sleeper.kill()
        sleeper.wait()
        h.close()


if __name__ == "__main__":
    main()
