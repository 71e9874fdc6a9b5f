#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""GFD's NodeFeature output of `gpulet labels` (issue 32 item 3) on the real node of tests/k8s with the
DaemonSet and garbage-collector controllers (RBAC on), with the chart's gpu-feature-discovery
ServiceAccount and Role exactly as `helm template` renders them (chartapi.py), and NFD's NodeFeature CRD
(tests/k8s/data/nodefeature-crd.yaml; no nfd-master runs here, so the object itself is checked):

  * without the CRD, the default --use-node-feature-api says the API serves no NodeFeatures and writes
    the feature file instead;
  * with the CRD and the chart's DaemonSet running (a stand-in pod that owns nothing itself), the labels
    daemon, started as that pod (NODE_NAME, NAMESPACE, POD_NAME), writes nvidia-features-for-<node> in the
    pod's namespace with exactly the labels `gpulet labels` computes, the node-name label and the pod's
    DaemonSet (controller) and the pod as owners, and removes the fallback file;
  * an object deleted behind its back is written again at once (its informer), also after kube-apiserver
    was restarted under it;
  * deleting the DaemonSet (what `helm uninstall` does) lets the garbage collector remove the object: the
    labels leave with the release;
  * --use-node-feature-api=false writes the file and no object.

Fails on a `gpulet labels` that only writes the file. Without the registries (Go module proxy, npm) the
peers cannot be built and the test fails."""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from chartapi import NS, RbacNode, grant, pods_of, render, run_daemonsets  # noqa: E402
from node import FAKE_NVML_LIB, GPULET, NODE_NAME, NodeError  # noqa: E402
from podcheck import check  # noqa: E402

OBJ = "nvidia-features-for-" + NODE_NAME
CRD = os.path.join(HERE, "data", "nodefeature-crd.yaml")
FILE = "etc/kubernetes/node-feature-discovery/features.d/gfd"


def labels_argv(node, kc, *args):
    return [GPULET, "labels", "--root", node.root, "--nvml-library", FAKE_NVML_LIB, "--kubeconfig", kc, *args]


def labels_env(node, pod=""):
    return dict(node.plugin_env(), NODE_NAME=NODE_NAME, NAMESPACE=NS, POD_NAME=pod)


def oneshot(node, kc, *args):
    p = subprocess.run(node.ns(labels_argv(node, kc, "--oneshot", *args)), capture_output=True, text=True,
                       env=labels_env(node), timeout=120)
    check(p.returncode == 0, "gpulet labels --oneshot %s: rc %d %s" % (" ".join(args), p.returncode, p.stderr[-2000:]))
    return p.stderr


def computed(node):
    """The labels `gpulet labels` computes for the node, as key=value lines to stdout."""
    p = subprocess.run([GPULET, "labels", "--oneshot", "--output-file", "-", "--root", node.root, "--nvml-library",
                        FAKE_NVML_LIB], capture_output=True, text=True, env=node.plugin_env(), timeout=60)
    check(p.returncode == 0, "labels to stdout: %s" % p.stderr)
    return dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)


def obj(node):
    rc, out = node.kubectl("get", "nodefeatures", "-n", NS, OBJ, "-o", "json", check=False)
    import json
    return json.loads(out) if rc == 0 else None


def without_ts(d):
    return {k: v for k, v in d.items() if k != "nvidia.com/gfd.timestamp"}


def test_nodefeature():
    t0 = time.time()
    with RbacNode() as node:
        node.start(control_plane=True)
        docs = render({"gfd": {"enabled": True}})
        kc = grant(node, "gpu-feature-discovery", docs=docs)
        path = os.path.join(node.root, FILE)
        os.makedirs(os.path.dirname(path))  # the chart mounts it (DirectoryOrCreate)

        err = oneshot(node, kc)
        check("does not serve NodeFeatures" in err and os.path.exists(path), "without the CRD: %s" % err)
        with open(path) as f:
            check("nvidia.com/gpu.count=8\n" in f.read(), "the fallback file")
        print("PASS without NFD's CRD: the feature file, said once: %s" % err.strip().splitlines()[-1][:200])

        node.kubectl("label", "node", NODE_NAME, "nvidia.com/gpu.present=true")
        run_daemonsets(node, docs, {"gpu-feature-discovery"})
        pod = node.wait("the gpu-feature-discovery pod", lambda: pods_of(node, "gpu-feature-discovery"), timeout=90)[0]
        pod_obj = node.get("pod", "-n", NS, pod)
        ds_ref = pod_obj["metadata"]["ownerReferences"][0]
        node.kubectl("apply", "-f", CRD)
        node.kubectl("wait", "--for=condition=Established", "crd/nodefeatures.nfd.k8s-sigs.io", "--timeout=60s")

        node.spawn("labels", labels_argv(node, kc), env=labels_env(node, pod))
        o = node.wait("the NodeFeature object", lambda: obj(node), timeout=60, proc="labels")
        want = computed(node)
        check(without_ts(o["spec"]["labels"]) == without_ts(want) and "nvidia.com/gfd.timestamp" in o["spec"]["labels"],
              "spec.labels:\n got  %s\n want %s" % (sorted(o["spec"]["labels"].items()), sorted(want.items())))
        check(o["metadata"]["labels"] == {"nfd.node.kubernetes.io/node-name": NODE_NAME}, "labels %s" % o["metadata"])
        owners = o["metadata"].get("ownerReferences", [])
        check([(r["kind"], r["name"], r["uid"], r.get("controller", False)) for r in owners] ==
              [("DaemonSet", ds_ref["name"], ds_ref["uid"], True), ("Pod", pod, pod_obj["metadata"]["uid"], False)],
              "owners %s" % owners)
        node.wait("the fallback file removed", lambda: not os.path.exists(path), timeout=10, proc="labels")
        print("PASS %s/%s: %d labels as computed, owned by DaemonSet %s and pod %s; the fallback file removed"
              % (NS, OBJ, len(want), ds_ref["name"], pod))

        for why in ("deleted behind its back", "deleted after a kube-apiserver restart"):
            if "restart" in why:
                node.stop_proc("kube-apiserver")
                node._apiserver()
            uid = obj(node)["metadata"]["uid"]
            node.kubectl("delete", "nodefeature", "-n", NS, OBJ)
            t = time.time()
            o = node.wait("the object written again", lambda: (lambda x: x if x and x["metadata"]["uid"] != uid else None)(
                obj(node)), timeout=30, proc="labels")
            check(without_ts(o["spec"]["labels"]) == without_ts(want), "rewritten labels")
            print("PASS %s: written again after %.1f s (informer)" % (why, time.time() - t))

        node.stop_proc("labels")
        node.kubectl("delete", "daemonset", "-n", NS, ds_ref["name"])
        node.wait("the garbage collector to remove the object", lambda: obj(node) is None, timeout=90)
        print("PASS the DaemonSet deleted (helm uninstall): the garbage collector removed the NodeFeature")

        err = oneshot(node, kc, "--use-node-feature-api=false")
        check(obj(node) is None and os.path.exists(path), "--use-node-feature-api=false: %s" % err)
        print("PASS --use-node-feature-api=false: the feature file, no object")
    print("PASS test_nodefeature (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_nodefeature()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
