#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""HTTP benchmark of `gpulet exporter` on the 8 GPU + 14 MIG bench node with every device held by a
pod (python3-grpcio PodResources stand-in) and every field gpulet serves (-f with the collectors file
`bench_exporter --csv` prints): 10k scrapes over one keep-alive connection.
Prints latency against a floor measured in the same run (GET /healthz on the same connection: the
server's fixed cost), server CPU per scrape (/proc/PID/stat) and RSS every 1000 scrapes (goals, issue
14: p99 <= 2 ms, RSS <= 20 MiB and flat). usage: bench_exporter.py [SCRAPES]"""
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from exporter_lib import Exporter, PodResources, SRC, fixture  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
TICK = os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def rollup_kib(pid, key):
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def timed_get(conn, path):
    t0 = time.perf_counter()
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, r.status
    return time.perf_counter() - t0, len(body)


def main():
    tmp = tempfile.mkdtemp(prefix="gpulet-bench-")
    fx = os.path.join(tmp, "bench.json")
    subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make_bench_fixture.py"), fixture("dgx-a100"), fx], check=True)
    doc = json.load(open(fx))
    pods = []
    for i, g in enumerate(doc["gpus"]):
        ids = [c["uuid"] for m in g.get("mig") or [] for c in m["cis"]] or [g["uuid"]]
        for j, dev in enumerate(ids):
            res = "nvidia.com/gpu" if dev.startswith("GPU-") else "nvidia.com/mig-x"
            pods.append({"name": "job-%d-%d" % (i, j), "namespace": "ml", "containers": [
                {"name": "main", "devices": [{"resource_name": res, "device_ids": [dev]}]}]})
    root = os.path.join(tmp, "root")
    pr = PodResources(os.path.join(root, "var/lib/kubelet/pod-resources/kubelet.sock"), pods)
    csv = os.path.join(tmp, "all-fields.csv")
    build = os.environ.get("GPULET_BUILD", os.path.join(SRC, "build"))
    with open(csv, "w") as f:
        subprocess.run([os.path.join(build, "bench_exporter"), "--csv"], stdout=f, check=True)
    # samplers run every second during the scrapes (5x the default rate): scrapes meet their locks and
    # their allocations show in the RSS, as on a live node
    ex = Exporter(fx, ["--collect-interval", "1000", "-k", "-f", csv], root=root)
    try:
        ex.wait_for(lambda b: b.count("gpulet_pod_gpu_allocated{") == len(pods) and "DCGM_FI_DEV_FB_USED" in b,
                    what="every pod attributed")
        pid = ex.proc.pid
        conn = http.client.HTTPConnection("127.0.0.1", ex.port, timeout=10)
        for _ in range(100):
            timed_get(conn, "/metrics")
        floors = sorted(timed_get(conn, "/healthz")[0] for _ in range(1000))
        floor, floor99 = statistics.median(floors), floors[int(len(floors) * 0.99)]
        rss = [(0, rss_kib(pid))]
        lat = []
        c0 = cpu_s(pid)
        size = 0
        for i in range(1, N + 1):
            t, size = timed_get(conn, "/metrics")
            lat.append(t)
            if i % 1000 == 0:
                rss.append((i, rss_kib(pid)))
        cpu = (cpu_s(pid) - c0) / N
        lat.sort()
        med = statistics.median(lat)
        print("bench_exporter.py: 8 GPUs + 14 MIG instances, every device held by a pod; %d scrapes of %d bytes" % (N, size))
        p99 = lat[int(len(lat) * 0.99)]
        fams = sum(1 for l in ex.scrape().splitlines() if l.startswith("# TYPE DCGM_"))
        print("fields   %d DCGM families served (every field NVML gives on this node)" % fams)
        print("latency  median %.3f ms  p99 %.3f ms (client side, keep-alive; goal p99 <= 2 ms)" % (med * 1e3, p99 * 1e3))
        print("floor    median %.3f ms  p99 %.3f ms (GET /healthz, same connection)   ratio median %.2f x, p99 %.2f x floor"
              % (floor * 1e3, floor99 * 1e3, med / floor, p99 / floor99))
        print("cpu      %.1f us per scrape (server utime+stime / scrapes)" % (cpu * 1e6))
        print("rss      " + "  ".join("%dk:%.1fMiB" % (n // 1000, k / 1024) for n, k in rss))
        grow = rss[-1][1] - rss[1][1]
        print("rss      of which anonymous (heap, stacks) %.1f MiB, file-backed shared libraries %.1f MiB (libgrpc, "
              "its abseil/ssl deps, libc), Pss %.1f MiB" % (rollup_kib(pid, "Anonymous") / 1024,
                                                          (rss[-1][1] - rollup_kib(pid, "Anonymous")) / 1024,
                                                          rollup_kib(pid, "Pss") / 1024))
        print("rss      after %d scrapes %.1f MiB (goal <= 20 MiB), growth from 1k to %dk: %+d KiB" %
              (N, rss[-1][1] / 1024, N // 1000, grow))
    finally:
        ex.cleanup()
        pr.stop()


if __name__ == "__main__":
    main()
