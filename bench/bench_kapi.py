#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""API traffic of one node's idle watch in steady state (issue 32 item 8): gpulet's Kubernetes client
(src/kapi, an informer on the node's own Node object: fieldSelector metadata.name=NODE, as the per-node
config and health code will run it) against a real kube-apiserver 1.34 + etcd (tests/k8s/controlplane.py),
as requests and bytes per minute, against the floor measured in the same run: one raw watch request by
curl with the same parameters (bookmarks on, the longest timeout the client asks for), which is the least
any watcher can cost. Both counted by themselves and by the API server's own metrics
(apiserver_request_total, apiserver_watch_events_sizes); the objects do not change during the run.

Also the memory a client costs: VmRSS of a process before and after kapi_open() (libcurl and OpenSSL
are loaded then, not at start-up), floor: the same process before.

usage: bench/bench_kapi.py [MINUTES=5]   (env GPULET_BUILD). Prints; asserts nothing."""
import json
import os
import subprocess
import sys
import threading
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "k8s"))
from controlplane import ControlPlane  # noqa: E402
from node import BUILD  # noqa: E402

MINUTES = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
TOOL = os.path.join(BUILD, "kapi_tool")
NODE = "bench-node"


def metrics(cp):
    """(WATCH+LIST requests on nodes, watch event bytes sent for nodes, count) from the API server."""
    text = cp.kubectl("get", "--raw", "/metrics")[1]
    reqs = 0.0
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{") and 'resource="nodes"' in line and \
                ('verb="WATCH"' in line or 'verb="LIST"' in line):
            reqs += float(line.rsplit(" ", 1)[1])
    size = count = 0.0
    for line in text.splitlines():
        if 'kind="Node"' in line or 'resource="nodes"' in line:
            if line.startswith("apiserver_watch_events_sizes_sum{"):
                size += float(line.rsplit(" ", 1)[1])
            elif line.startswith("apiserver_watch_events_sizes_count{"):
                count += float(line.rsplit(" ", 1)[1])
    return reqs, size, count


def floor_phase(cp, seconds, rv):
    """One curl watch, HTTP/1.1 as the client speaks it, already open when the window starts (as the
    client's is): no request in the window, the stream's body bytes only."""
    c = cp.certs
    out = os.path.join(cp.t, "floor-watch.json")
    url = ("https://127.0.0.1:6443/api/v1/nodes?watch=1&fieldSelector=metadata.name%%3D%s&resourceVersion=%s"
           "&allowWatchBookmarks=true&timeoutSeconds=600" % (NODE, rv))
    p = subprocess.run(cp.ns(["curl", "-sS", "--http1.1", "--cacert", c + "/ca.crt", "--cert", c + "/admin.crt",
                              "--key", c + "/admin.key", "-H", "Accept: application/json", "--max-time", str(seconds),
                              "-o", out, "-w", "%{size_download}", url]),
                       capture_output=True, text=True, timeout=seconds + 60)
    body = int(p.stdout.split()[0])
    with open(out) as f:
        events = [json.loads(line)["type"] for line in f if line.strip()]
    return {"requests": 0, "bytes_in": body, "bytes_out": 0, "bookmarks": events.count("BOOKMARK"),
            "events": len(events)}


def kapi_phase(cp, seconds):
    """kapi_tool watch on the node: its own counters from synced to the end."""
    p = subprocess.Popen(cp.ns([TOOL, "--kubeconfig", cp.admin_kubeconfig, "watch", "nodes", "-", "--field",
                                "metadata.name=" + NODE]), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lines = []
    cond = threading.Condition()

    def reader():
        for line in p.stdout:
            with cond:
                lines.append(json.loads(line))
                cond.notify_all()

    threading.Thread(target=reader, daemon=True).start()

    def ask(cmd, key):
        n = len(lines)
        p.stdin.write(cmd + "\n")
        p.stdin.flush()
        with cond:
            cond.wait_for(lambda: any(key in x for x in lines[n:]), 30)
            return [x for x in lines[n:] if key in x][-1][key]

    deadline = time.time() + 30
    while not ask("status", "status")["synced"] and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(1)  # the WATCH request is out
    s0, st0 = ask("stats", "stats"), ask("status", "status")
    time.sleep(seconds)
    s1, st1 = ask("stats", "stats"), ask("status", "status")
    p.stdin.close()
    p.wait(30)
    return {"requests": s1["requests"] - s0["requests"], "bytes_in": s1["bytes_in"] - s0["bytes_in"],
            "bytes_out": s1["bytes_out"] - s0["bytes_out"], "bookmarks": st1["bookmarks"] - st0["bookmarks"],
            "watches": st1["watches"] - st0["watches"], "lists": st1["lists"] - st0["lists"],
            "startup_requests": s0["requests"]}


def rss(cp):
    out = subprocess.run(cp.ns([TOOL, "--kubeconfig", cp.admin_kubeconfig, "maps"]), capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def main():
    seconds = int(MINUTES * 60)
    with ControlPlane() as cp:
        cp.start()
        cp.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "Node",
                                                         "metadata": {"name": NODE, "labels": {"a": "b"}}}))
        rv = json.loads(cp.kubectl("get", "--raw", "/api/v1/nodes?fieldSelector=metadata.name%3D" + NODE)[1])[
            "metadata"]["resourceVersion"]
        # both watchers at once, so that they see the same server (bookmarks go out when the watch
        # cache's resourceVersion moved on, which depends on what else happens)
        m0 = metrics(cp)
        res = {}
        t = threading.Thread(target=lambda: res.update(floor=floor_phase(cp, seconds, rv)))
        t.start()
        ours = kapi_phase(cp, seconds)
        t.join()
        m1 = metrics(cp)
        mem = rss(cp)
    floor = res["floor"]
    per_min = lambda v: v * 60.0 / seconds  # noqa: E731
    print("idle watch of one Node, %d s, kube-apiserver 1.34; floor: one curl watch with the same parameters, "
          "open at the same time" % seconds)
    print("%-28s %12s %12s %13s %14s" % ("", "requests/min", "bytes in/min", "bytes out/min", "ratio to floor"))
    fb = per_min(floor["bytes_in"] + floor["bytes_out"])
    for name, r in (("floor (curl, 1 watch)", floor), ("kapi informer", ours)):
        b = per_min(r["bytes_in"] + r["bytes_out"])
        print("%-28s %12.2f %12.0f %13.0f %14.2f" % (name, per_min(r["requests"]), per_min(r["bytes_in"]),
                                                       per_min(r["bytes_out"]), b / fb if fb else float("nan")))
    print("in the window: floor %d events, all bookmarks (%d); kapi %d bookmarks, %d watch requests, %d relists; "
          "bytes per bookmark: floor %.0f, kapi %.0f (ratio %.2f)"
          % (floor["events"], floor["bookmarks"], ours["bookmarks"], ours["watches"], ours["lists"],
             floor["bytes_in"] / max(floor["bookmarks"], 1), ours["bytes_in"] / max(ours["bookmarks"], 1),
             (ours["bytes_in"] / max(ours["bookmarks"], 1)) / max(floor["bytes_in"] / max(floor["bookmarks"], 1), 1)))
    print("kapi informer: %d requests to start (LIST + WATCH); the server sends a bookmark about once a minute per "
          "watch, not in step for the two" % ours["startup_requests"])
    print("(bytes are HTTP: headers and bodies, without TLS records; the floor's window holds only its stream's body)")
    print("API server's view over the run (both watchers, the client's LIST included): %+.0f requests on nodes, "
          "%+.0f watch events for Node, %+.0f bytes" % (m1[0] - m0[0], m1[2] - m0[2], m1[1] - m0[1]))
    print("memory: VmRSS %d KiB before kapi_open (floor), %d KiB after (libcurl + OpenSSL mapped: %s): ratio %.2f"
          % (mem["rss_before_kib"], mem["rss_after_kib"], mem["after"],
             mem["rss_after_kib"] / mem["rss_before_kib"]))


if __name__ == "__main__":
    main()
