#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet exporter` on the real node attributes GPUs to the running pods through the REAL kubelet's
PodResources socket (/var/lib/kubelet/pod-resources/kubelet.sock inside the node's namespace):
two running pods, one GPU each; the series of exactly their GPUs carry pod/namespace/container, and
the GPU each pod's series names is the one whose device node the pod sees (host major:minor). Then
kubelet and the plugin restart with those pods running: the pods keep running, a third pod gets a
GPU neither holds, and the exporter attributes all three.

dcgm-exporter 4.8's pod metadata through the same real kubelet and the node's real kube-apiserver
(issue 35 item 6): with --kubernetes-enable-pod-labels, --kubernetes-enable-pod-uid and an allowlist,
each attributed series carries pod_uid as the API server has it and the allowed labels only; a label
put on a pod with kubectl after the exporter started reaches its series through the pods watch.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node import FAKE_NVML_LIB, GPULET, NODE_NAME, Node, NodeError  # noqa: E402
from podcheck import check, gpu_nodes, parse, probe_script, spec  # noqa: E402

ADDR = "127.0.0.1:19400"


LAST = {}


def scrape(node):
    p = subprocess.run(node.ns(["/bin/busybox", "wget", "-q", "-O", "-", "http://%s/metrics" % ADDR]),
                       capture_output=True, text=True, timeout=20)
    LAST["scrape"] = "rc %d %s" % (p.returncode, p.stderr.strip()[-300:])
    return p.stdout if p.returncode == 0 else ""


def seen(node):
    LAST["attributed"] = attributed(scrape(node))
    return LAST["attributed"]


def attributed(body):
    """{pod: set of GPU UUIDs} from the DCGM_FI_DEV_GPU_UTIL series."""
    out = {}
    for line in body.splitlines():
        if not line.startswith("DCGM_FI_DEV_GPU_UTIL{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
        if labels.get("pod"):
            out.setdefault(labels["pod"], set()).add(labels.get("UUID"))
            check(labels.get("namespace") == "default" and labels.get("container") == "c",
                  "series labels %s" % labels)
    return out


def pod_meta(body):
    """{pod: (pod_uid, team label or None, whether tier is there)} from the DCGM_FI_DEV_GPU_UTIL series."""
    out = {}
    for line in body.splitlines():
        if line.startswith("DCGM_FI_DEV_GPU_UTIL{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
            if labels.get("pod"):
                out[labels["pod"]] = (labels.get("pod_uid"), labels.get("team"), "tier" in labels)
    return out


def uid_of(node, name):
    return json.loads(node.kubectl("get", "pod", name, "-o", "json")[1])["metadata"]["uid"]


def test_exporter():
    t0 = time.time()
    with Node() as node:
        # mixed: nvidia.com/gpu holds only the 6 GPUs without MIG, whose series carry their own UUID
        # (a MIG-enabled GPU handed out whole under `none` has per-instance series instead)
        node.start(("--device-list-strategy=cdi-cri", "--mig-strategy=mixed"), gpus="6")
        fx = node.fixture_data()
        uuid_of_minor = {g["minor"]: g["uuid"] for g in fx["gpus"]}
        want = {}
        for name in ("holder-a", "holder-b"):
            log = node.start_pod(name, probe_script(spec(node)), {"nvidia.com/gpu": "1"})
            (gpu,) = gpu_nodes(parse(log)[0])
            want[name] = {uuid_of_minor[int(gpu[len("/dev/nvidia"):])]}
        check(want["holder-a"] != want["holder-b"], "two pods got one GPU: %s" % want)
        node.kubectl("label", "pod", "holder-a", "team=red", "tier=gpu")
        node.spawn("exporter", [GPULET, "exporter", "--address", ADDR, "--nvml-library", FAKE_NVML_LIB,
                                "--root", "/", "--collect-interval", "500", "--pod-resources-interval", "500",
                                "--kubernetes=true",  # pod attribution is off by default, as dcgm-exporter's
                                "--kubernetes-enable-pod-labels", "--kubernetes-enable-pod-uid",
                                "--kubernetes-pod-label-allowlist-regex", "^team$"],
                   env=dict(node.plugin_env(), KUBECONFIG=node.admin_kubeconfig, NODE_NAME=NODE_NAME))
        try:
            got = node.wait("the exporter to attribute both pods", lambda: (lambda a: a if set(a) == set(want)
                                                                           else None)(seen(node)),
                            timeout=60, proc="exporter")
        except NodeError as e:
            raise NodeError("%s\nlast scrape %s, attributed %s, the pods see %s\nexporter log:\n%s"
                            % (e, LAST.get("scrape"), LAST.get("attributed"), want, node.log_tail("exporter")))
        check(got == want, "attribution %s, the pods see %s" % (got, want))
        print("PASS exporter over the real PodResources socket: %s" % {k: sorted(v) for k, v in got.items()})
        uids = {name: uid_of(node, name) for name in want}
        meta = node.wait("pod_uid and the allowed labels from the API server",
                         lambda: (lambda m: m if m.get("holder-a", (None, None))[1] == "red" else None)(
                             pod_meta(scrape(node))), timeout=60, proc="exporter")
        check(meta == {"holder-a": (uids["holder-a"], "red", False), "holder-b": (uids["holder-b"], None, False)},
              "pod metadata %s, the API server's UIDs %s (holder-a: team=red kept, tier=gpu left out)" % (meta, uids))
        print("PASS pod_uid and allowlisted pod labels as the real kube-apiserver has them: %s" % meta)

        # restarts with the pods running: they keep their GPUs, a new pod gets another one
        registered = node.log_tail("plugin", 10 ** 7).count("Registered device plugin")
        node.stop_proc("kubelet")
        node.start_kubelet()
        node.wait("the plugin to register again with the new kubelet",
                  lambda: node.log_tail("plugin", 10 ** 7).count("Registered device plugin") > registered,
                  timeout=30, proc="plugin")
        node.stop_plugin()
        node.start_plugin("--device-list-strategy=cdi-cri", "--mig-strategy=mixed")
        node.wait_node_ready_for_gpus(count="6")
        for name in want:
            phase = json.loads(node.kubectl("get", "pod", name, "-o", "json")[1])["status"]["phase"]
            check(phase == "Running", "pod %s is %s after the kubelet and plugin restarts" % (name, phase))
        log = node.start_pod("holder-c", probe_script(spec(node)), {"nvidia.com/gpu": "1"})
        (gpu,) = gpu_nodes(parse(log)[0])
        want["holder-c"] = {uuid_of_minor[int(gpu[len("/dev/nvidia"):])]}
        check(want["holder-c"].isdisjoint(want["holder-a"] | want["holder-b"]),
              "a new pod got a GPU a running pod holds: %s" % want)
        got = node.wait("the exporter to attribute the three pods",
                        lambda: (lambda a: a if a == want else None)(seen(node)), timeout=60, proc="exporter")
        # a label put on a running pod reaches its series through the watch (the kubelet never sees it)
        node.kubectl("label", "pod", "holder-c", "team=blue")
        meta = node.wait("holder-c's new label through the pods watch",
                         lambda: (lambda m: m if m.get("holder-c", (None, None))[1] == "blue" else None)(
                             pod_meta(scrape(node))), timeout=60, proc="exporter")
        check(meta["holder-c"][0] == uid_of(node, "holder-c"), "holder-c's pod_uid %s" % (meta,))
        print("PASS kubelet then plugin restart with pods running: they keep their GPUs, a new pod gets "
              "another; attribution %s" % {k: sorted(v) for k, v in got.items()})
    print("PASS test_exporter (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_exporter()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
