#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""API traffic of one node's gpulet in steady state (issue 32 item 8), per minute, against a real
kube-apiserver 1.34 + etcd (tests/k8s/controlplane.py, RBAC on), each consumer with the chart's own
account for it (tests/k8s/chartapi.py) and run alone, so that the API server's own counters
(apiserver_request_total, apiserver_response_sizes, apiserver_watch_events_sizes on the consumer's
resources) are its traffic:

  * `gpulet plugin --node-health` on the fake dgx-a100 (serving without kubelet): GPUs healthy; and the
    same plugin without it, the floor of its memory (VmRSS and PSS of each, read in the window; the
    budget: RSS within 2 MiB of the floor's);
  * `gpulet labels` with the NodeFeature object, GFD's default timestamp label (a new value each pass:
    one write a pass, as GFD) and with --no-timestamp (nothing changes: nothing is written);
  * `gpulet doctor --serve-metrics` reading the cluster (its node, 10 running pods bound to it, one
    with a GPU), walking every 5 minutes.

Floor, measured in the same run: one idle curl watch (bookmarks on, the longest timeout a client asks
for) on another resource, open the whole window: the least any watcher costs (no request, a bookmark a
minute). A consumer's first seconds (its LISTs, the first write) are left out and counted apart.

usage: bench/bench_api_traffic.py [MINUTES=5]   (env GPULET_BUILD). Prints; asserts nothing."""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "k8s"))
import chartapi  # noqa: E402
from controlplane import ControlPlane  # noqa: E402
from node import FAKE_NVML_LIB, FIXTURES, GPULET  # noqa: E402

MINUTES = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
WARMUP_S = 30
RSS_BUDGET_KIB = 2048  # the plugin with --node-health against without (issue 32 item 8)
NODE = "bench-node"
NS = chartapi.NS


def metrics(cp, resources):
    """(requests, response bytes, watch event bytes) on these resources, from the API server's counters."""
    text = cp.kubectl("get", "--raw", "/metrics")[1]
    reqs = size = wsize = 0.0
    for line in text.splitlines():
        m = re.search(r'resource="([^"]*)"', line)
        if not m or m.group(1) not in resources:
            continue
        v = float(line.rsplit(" ", 1)[1])
        if line.startswith("apiserver_request_total{"):
            reqs += v
        elif line.startswith("apiserver_response_sizes_sum{"):
            size += v
        elif line.startswith("apiserver_watch_events_sizes_sum{"):
            wsize += v
    return reqs, size, wsize


def floor(cp, seconds, out):
    c = cp.certs
    rv = json.loads(cp.kubectl("get", "--raw", "/api/v1/namespaces/%s/configmaps" % NS)[1])["metadata"]["resourceVersion"]
    url = ("https://127.0.0.1:6443/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%s&allowWatchBookmarks=true"
           "&timeoutSeconds=600" % (NS, rv))
    p = subprocess.run(cp.ns(["curl", "-sS", "--http1.1", "--cacert", c + "/ca.crt", "--cert", c + "/admin.crt", "--key",
                              c + "/admin.key", "-H", "Accept: application/json", "--max-time", str(seconds), "-o",
                              os.path.join(cp.t, "floor.json"), "-w", "%{size_download}", url]),
                       capture_output=True, text=True, timeout=seconds + 60)
    out["bytes"] = int(p.stdout.split()[0] or 0)


def measure(cp, name, argv, env, resources, seconds):
    log = open(os.path.join(cp.logs, name.split()[0] + ".log"), "a")
    m_start = metrics(cp, resources)
    p = subprocess.Popen(cp.ns(argv), env=env, stdout=log, stderr=subprocess.STDOUT)
    time.sleep(WARMUP_S)
    m0 = metrics(cp, resources)
    fl = {}
    t = threading.Thread(target=floor, args=(cp, seconds, fl))
    t.start()
    time.sleep(seconds)
    m1 = metrics(cp, resources)
    rss = memory(p.pid)  # nsenter runs gpulet in its own place (exec, no fork)
    t.join()
    p.terminate()
    p.wait(30)
    alive = p.returncode in (0, -15)
    return {"name": name, "startup_requests": m0[0] - m_start[0], "requests": m1[0] - m0[0],
            "bytes": (m1[1] - m0[1]) + (m1[2] - m0[2]), "floor_bytes": fl.get("bytes", 0), "exit": p.returncode,
            "ok": alive, "rss_kib": rss[0], "pss_kib": rss[1]}


def memory(pid):
    """(VmRSS, Pss) in KiB of a running process."""
    with open("/proc/%d/status" % pid) as f:
        rss = int(next(line for line in f if line.startswith("VmRSS:")).split()[1])
    with open("/proc/%d/smaps_rollup" % pid) as f:
        pss = int(next(line for line in f if line.startswith("Pss:")).split()[1])
    return rss, pss


def pods(cp):
    """10 pods bound to the node, one asking for a GPU, marked Running and Ready as a kubelet would."""
    for i in range(10):
        res = {"limits": {"nvidia.com/gpu": "1"}} if i == 0 else {}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w%d" % i, "namespace": "default"},
               "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "busybox", "resources": res}]}}
        cp.kubectl("apply", "-f", "-", stdin=json.dumps(pod))
        status = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                             "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "image": "busybox",
                                                    "imageID": "", "state": {"running": {}}}]}}
        cp.kubectl("patch", "pod", "w%d" % i, "-n", "default", "--subresource=status", "--type=merge", "-p",
                   json.dumps(status))


def main():
    seconds = int(MINUTES * 60)
    with ControlPlane() as cp, tempfile.TemporaryDirectory() as tmp:
        cp.start()
        chartapi.ensure_ns(cp)
        cp.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}))
        cp.kubectl("apply", "-f", os.path.join(SRC, "tests", "k8s", "data", "nodefeature-crd.yaml"))
        pods(cp)
        docs = chartapi.render({"gfd": {"enabled": True}})
        kc = {c: chartapi.grant(cp, c, docs=docs) for c in ("device-plugin", "gpu-feature-discovery", "doctor")}
        root = os.path.join(tmp, "root")
        subprocess.run(["sh", os.path.join(SRC, "tests", "lib", "mkroot.sh"), root,
                        os.path.join(FIXTURES, "dgx-a100.json")], check=True, capture_output=True)
        os.makedirs(os.path.join(root, "etc/kubernetes/node-feature-discovery/features.d"), exist_ok=True)
        env = dict(os.environ, FAKE_NVML_FIXTURE=os.path.join(FIXTURES, "dgx-a100.json"), NODE_NAME=NODE,
                   NAMESPACE=NS)
        env.pop("KUBECONFIG", None)
        common = ["--root", root, "--nvml-library", FAKE_NVML_LIB]
        plugin = [GPULET, "plugin", *common, "--driver-root", root, "--kubelet-socket", "", "--device-plugin-path",
                  os.path.join(tmp, "dp"), "--device-list-strategy", "envvar"]
        runs = [
            ("plugin (node health off: the floor)", plugin, {"nodes", "events"}),
            ("plugin --node-health", [GPULET, "plugin", *common, "--driver-root", root, "--kubelet-socket", "",
                                      "--device-plugin-path", os.path.join(tmp, "dp"), "--device-list-strategy",
                                      "envvar", "--node-health", "--kubeconfig", kc["device-plugin"]],
             {"nodes", "events"}),
            ("labels (NodeFeature, timestamp)", [GPULET, "labels", *common, "--kubeconfig", kc["gpu-feature-discovery"]],
             {"nodefeatures", "pods"}),
            ("labels (NodeFeature, --no-timestamp)", [GPULET, "labels", *common, "--no-timestamp", "--kubeconfig",
                                                      kc["gpu-feature-discovery"]], {"nodefeatures", "pods"}),
            ("doctor --serve-metrics (cluster)", [GPULET, "doctor", *common, "--serve-metrics", "127.0.0.1:19402",
                                                  "--interval", "300", "--kubeconfig", kc["doctor"]],
             {"nodes", "pods", "events"}),
        ]
        os.makedirs(os.path.join(tmp, "dp"))
        results = [measure(cp, name, argv, env, res, seconds) for name, argv, res in runs]
    per_min = lambda v: v * 60.0 / seconds  # noqa: E731
    print("one node's gpulet against kube-apiserver 1.34, each consumer alone, steady state over %d s after %d s "
          "of start-up; floor: one idle curl watch (bookmarks) in the same window" % (seconds, WARMUP_S))
    print("%-40s %9s %12s %10s %11s %6s %9s %9s" % ("", "start req", "requests/min", "bytes/min", "floor B/min",
                                                  "ratio", "RSS KiB", "PSS KiB"))
    for r in results:
        fb = per_min(r["floor_bytes"])
        print("%-40s %9.0f %12.2f %10.0f %11.0f %6.2f %9d %9d%s" % (
            r["name"], r["startup_requests"], per_min(r["requests"]), per_min(r["bytes"]), fb,
            per_min(r["bytes"]) / fb if fb else float("nan"), r["rss_kib"], r["pss_kib"],
            "" if r["ok"] else "  (exited %s)" % r["exit"]))
    off, on = results[0], results[1]
    delta = on["rss_kib"] - off["rss_kib"]
    print("plugin memory with --node-health: RSS %+d KiB (%.2fx the floor's; budget +%d KiB: %s), PSS %+d KiB: its "
          "thread (each round with the API server is a child of its own)"
          % (delta, on["rss_kib"] / off["rss_kib"], RSS_BUDGET_KIB, "within" if delta <= RSS_BUDGET_KIB else "OVER",
             on["pss_kib"] - off["pss_kib"]))
    print("(requests and bytes as the API server counts them on the consumer's resources: response bodies and "
          "watch events, without headers and TLS; the floor's are its stream's body)")


if __name__ == "__main__":
    main()
