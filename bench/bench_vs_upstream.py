#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gpulet's plugin and NVIDIA's nvidia-device-plugin (k8s-device-plugin v0.17.4, built from its Go
module by tests/lib/gopeers.py into ~/.cache/gpulet-peers) in one run, one after the other on the
same fake node (dgx-a100, 8 GPUs) and the same kubelet stand-in, run as tests/oracles/test_plugin_oracle.py
runs them (NVIDIA's in a private mount namespace; both with the fake NVML):

- Allocate round trip p50/p99 over N calls of one GPU (python3-grpcio, one channel), alternated
  with GetDevicePluginOptions on the same socket as the floor;
- kubelet restart -> Register over R restarts of the stand-in (listening -> Register seen);
- RSS and PSS (/proc/PID/smaps_rollup) after registration and after the Allocate run.

Each figure is printed for both and as the ratio gpulet/NVIDIA (below 1: gpulet is smaller or faster).
PSS here counts gpulet's shared libraries (libc, gRPC, jansson) as shared with every other process of
this machine that maps them, while NVIDIA's plugin is one static Go binary: bench/bench_pss.py
measures gpulet from a private image, as in a pod.

usage: bench/bench_vs_upstream.py [N] [R]   (env GPULET, FAKE_NVML_LIB, GPULET_BUILD as for the tests;
defaults: build/). Prints; asserts nothing."""
import os
import statistics
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.setdefault("GPULET_BUILD", os.path.join(SRC, "build"))
os.environ.setdefault("GPULET", os.path.join(BUILD, "gpulet"))
os.environ.setdefault("FAKE_NVML_LIB", os.path.join(BUILD, "fakenvml/libnvidia-ml.so.1"))
os.environ.setdefault("GPULET_SRC", SRC)
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
sys.path.insert(0, os.path.join(SRC, "tests", "oracles"))
import grpc  # noqa: E402
import oraclelib  # noqa: E402
import plugin_lib  # noqa: E402
from plugin_bench import interleaved, pct  # noqa: E402
from test_plugin_oracle import ours, upstream  # noqa: E402

pb = plugin_lib.pb


def mem_kib(pid):
    out = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("Rss", "Pss"):
                out[k] = int(v.split()[0])
    return out


def measure(h, start, pid_of, n, restarts):
    mark = h.events.mark()
    stop = start()
    try:
        gpu = h.wait_list("nvidia.com/gpu", start=mark, timeout=30)["devices"][0]["id"]
        mem0 = mem_kib(pid_of())
        ch = grpc.insecure_channel("unix:" + h.sock("nvidia.com/gpu"))
        alloc = ch.unary_unary("/v1beta1.DevicePlugin/Allocate", request_serializer=pb.AllocateRequest.SerializeToString,
                               response_deserializer=pb.AllocateResponse.FromString)
        opts = ch.unary_unary("/v1beta1.DevicePlugin/GetDevicePluginOptions",
                              request_serializer=pb.Empty.SerializeToString,
                              response_deserializer=pb.DevicePluginOptions.FromString)
        req = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=[gpu])])
        interleaved([lambda: alloc(req), lambda: opts(pb.Empty())], 300)  # warm up
        a, o = interleaved([lambda: alloc(req), lambda: opts(pb.Empty())], n)
        mem1 = mem_kib(pid_of())
        ch.close()
        lat = []
        for _ in range(restarts):
            h.kill_standin()
            listening = h.start_standin()
            reg = h.events.wait(lambda ev: ev["event"] == "register", timeout=30)
            lat.append(reg["t"] - listening["t"])
            h.wait_list("nvidia.com/gpu", timeout=30)
        return {"alloc_p50": pct(a, 50), "alloc_p99": pct(a, 99), "floor_p99": pct(o, 99),
                "reg_median": statistics.median(lat), "reg_max": max(lat),
                "rss0": mem0["Rss"], "pss0": mem0["Pss"], "rss1": mem1["Rss"], "pss1": mem1["Pss"]}
    finally:
        stop()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    restarts = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    bins = oraclelib.build_kdp()
    h = plugin_lib.Harness("dgx-a100", ["--with-fakenvml"])
    procs = {}
    try:
        h.start_standin()
        args = ["--device-list-strategy", "envvar", "--device-id-strategy", "uuid"]
        start_up = upstream(h, bins["nvidia-device-plugin"], args, procs)
        res = {"NVIDIA": measure(h, start_up, lambda: procs["upstream"].pid, n, restarts)}
        res["gpulet"] = measure(h, ours(h, args), lambda: h.plugin.pid, n, restarts)
    finally:
        h.close()
    ms = lambda x: "%.3f ms" % (x * 1e3)  # noqa: E731
    mib = lambda k: "%.1f MiB" % (k / 1024)  # noqa: E731
    rows = [("Allocate p50", "alloc_p50", ms), ("Allocate p99", "alloc_p99", ms),
            ("GetDevicePluginOptions p99 (floor)", "floor_p99", ms),
            ("restart -> Register median", "reg_median", ms), ("restart -> Register max", "reg_max", ms),
            ("RSS after registration", "rss0", mib), ("PSS after registration", "pss0", mib),
            ("RSS after the Allocate run", "rss1", mib), ("PSS after the Allocate run", "pss1", mib)]
    print("dgx-a100 (8 GPUs), %d Allocate calls, %d kubelet restarts; NVIDIA = nvidia-device-plugin %s"
          % (n, restarts, oraclelib.KDP[2]))
    print("%-36s %14s %14s %16s" % ("", "gpulet", "NVIDIA", "gpulet/NVIDIA"))
    for label, key, fmt in rows:
        g, u = res["gpulet"][key], res["NVIDIA"][key]
        print("%-36s %14s %14s %15.2fx" % (label, fmt(g), fmt(u), g / u if u else float("nan")))


if __name__ == "__main__":
    main()
