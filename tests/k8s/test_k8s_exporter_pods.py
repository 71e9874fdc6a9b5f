#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""dcgm-exporter 4.8's pod metadata in `gpulet exporter`, against a real kube-apiserver 1.34 and etcd
(controlplane.py, RBAC on), judged by the API server's own objects (kubectl) (issue 35 item 6):

  * --kubernetes-enable-pod-labels, --kubernetes-enable-pod-uid and the label allowlist: the labels and
    UID of the pod holding a GPU, as the API server has them, from a watch of this node's pods only
    (fieldSelector spec.nodeName); a label added with kubectl shows on the next scrape;
  * --kubernetes-virtual-gpus: FB_USED and GPU_UTIL per pod from the processes NVML lists, each mapped
    to its pod through the pod UID in /proc/<pid>/cgroup (the fake node's), not the whole GPU's value;
  * RBAC: a ServiceAccount that may get pods but not list/watch them: the exporter says which rule is
    missing, and serves without pod labels rather than wrong ones.

The GPU is the fake NVML's, kubelet's PodResources a stand-in (tests/integration/podres_standin.py)
naming the same pods. Without the registries the peers cannot be built and the test fails."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from controlplane import ControlPlane  # noqa: E402
from exporter_lib import FAKE, GPULET, PodResources, fixture, series  # noqa: E402
from node import NodeError  # noqa: E402
from podcheck import check  # noqa: E402

NS = "ml"
NODE = "node-a"
PORT = 19400


def pod(name, node, labels):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "registry.invalid/none"}]}}


def create(cp, obj):
    path = os.path.join(cp.t, obj["metadata"]["name"] + ".json")
    with open(path, "w") as f:
        json.dump(obj, f)
    cp.kubectl("apply", "-f", path)
    return json.loads(cp.kubectl("get", "pod", "-n", NS, obj["metadata"]["name"], "-o", "json")[1])["metadata"]["uid"]


class Exporter:
    """`gpulet exporter` inside the control plane's namespaces (where the API server listens)."""

    def __init__(self, cp, root, fx, args, kubeconfig):
        self.cp, self.log_path = cp, os.path.join(cp.logs, "exporter-%d.log" % time.monotonic_ns())
        env = dict(os.environ, FAKE_NVML_FIXTURE=fx, NODE_NAME=NODE, KUBECONFIG=kubeconfig)
        for k in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
            env.pop(k, None)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cp.ns([GPULET, "exporter", "--nvml-library", FAKE, "--root", root,
                                            "--address", "127.0.0.1:%d" % PORT, "--collect-interval", "200",
                                            "--pod-resources-interval", "200", "-k", *args]),
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def scrape(self):
        p = subprocess.run(self.cp.ns(["curl", "-sS", "--max-time", "10", "http://127.0.0.1:%d/metrics" % PORT]),
                           capture_output=True, text=True, timeout=30)
        return p.stdout if p.returncode == 0 else ""

    def wait_for(self, pred, what, timeout=60):
        deadline, body = time.time() + timeout, ""
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise NodeError("exporter exited %s:\n%s" % (self.proc.returncode, self.text()))
            body = self.scrape()
            if body and pred(body):
                return body
            time.sleep(0.2)
        raise NodeError("timed out waiting for %s; last scrape:\n%s\nlog:\n%s" % (what, body[-3000:], self.text()))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def node_root(cp, uids):
    """A fake node: one T4 with three processes (two of pod a, one of pod b), their cgroups under proc/."""
    root = os.path.join(cp.t, "root")
    os.makedirs(root, exist_ok=True)
    with open(fixture("single-t4")) as f:
        doc = json.load(f)
    g = doc["gpus"][0]
    g.setdefault("telemetry", {})["processes"] = [
        {"pid": 4101, "used_mib": 1000, "sm_util": 30}, {"pid": 4102, "used_mib": 24, "sm_util": 5},
        {"pid": 4201, "used_mib": 512, "sm_util": 11}]
    fx = os.path.join(cp.t, "fixture.json")
    with open(fx, "w") as f:
        json.dump(doc, f)
    cg = {4101: "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/cri-containerd-1.scope\n"
                % uids["a"].replace("-", "_"),
          4102: "0::/kubepods/besteffort/pod%s/2\n" % uids["a"],
          4201: "12:memory:/kubepods/pod%s/3\n0::/kubepods/pod%s/3\n" % (uids["b"], uids["b"])}
    for pid, text in cg.items():
        os.makedirs(os.path.join(root, "proc", str(pid)), exist_ok=True)
        with open(os.path.join(root, "proc", str(pid), "cgroup"), "w") as f:
            f.write(text)
    return root, fx, g["uuid"]


def test_pods(cp):
    uids = {"a": create(cp, pod("a", NODE, {"app": "trainer", "app.kubernetes.io/name": "llm", "team": "x"})),
            "b": create(cp, pod("b", NODE, {"app": "infer"}))}
    create(cp, pod("elsewhere", "node-b", {"app": "other"}))
    root, fx, gpu = node_root(cp, uids)
    holders = [{"name": "a", "namespace": NS, "containers": [{"name": "main", "devices": [
                   {"resource_name": "nvidia.com/gpu", "device_ids": [gpu + "::0"]}]}]},
               {"name": "b", "namespace": NS, "containers": [{"name": "main", "devices": [
                   {"resource_name": "nvidia.com/gpu", "device_ids": [gpu + "::1"]}]}]}]
    pr = PodResources(os.path.join(root, "var/lib/kubelet/pod-resources/kubelet.sock"), holders)
    ex = Exporter(cp, root, fx, ["--kubernetes-virtual-gpus", "--kubernetes-enable-pod-labels",
                                 "--kubernetes-enable-pod-uid", "--kubernetes-pod-label-allowlist-regex", "^app$,^team$"],
                  cp.admin_kubeconfig)
    try:
        def temp(b):
            return {l["pod"]: l for l, _ in series(b, "DCGM_FI_DEV_GPU_TEMP") if "pod" in l}
        body = ex.wait_for(lambda b: temp(b).get("a", {}).get("team") == "x", what="pod a's labels")
        t = temp(body)
        check(t["a"]["pod_uid"] == uids["a"] and t["a"]["app"] == "trainer" and t["b"]["app"] == "infer",
              "pod labels and UIDs as the API server has them: %s" % t)
        check("app_kubernetes_io_name" not in t["a"], "the allowlist keeps app and team only: %s" % t["a"])
        # per-pod values from the pods' processes: a 1000 + 24 MiB, 30 + 5 %; b 512 MiB, 11 %
        fb = {l.get("pod"): v for l, v in series(body, "DCGM_FI_DEV_FB_USED")}
        util = {l.get("pod"): v for l, v in series(body, "DCGM_FI_DEV_GPU_UTIL")}
        check(fb.get("a") == 1024 and fb.get("b") == 512 and None in fb, "FB_USED per pod: %s" % fb)
        check(util.get("a") == 35 and util.get("b") == 11 and None in util, "GPU_UTIL per pod: %s" % util)
        check(all(l.get("pod_uid") for l, _ in series(body, "DCGM_FI_DEV_FB_USED") if "pod" in l),
              "per-process series carry pod_uid")
        # a label added with kubectl reaches the series through the watch
        cp.kubectl("label", "pod", "-n", NS, "b", "team=y")
        body = ex.wait_for(lambda b: temp(b).get("b", {}).get("team") == "y", what="pod b's new label")
        check("Watching this node's pods" in ex.text(), "the watch is said: %s" % ex.text()[-2000:])
        print("PASS pod labels, UIDs, allowlist and per-pod FB_USED/GPU_UTIL from a real kube-apiserver")
    finally:
        ex.stop()
        pr.stop()
    return root, fx, holders


def test_rbac(cp, root, fx, holders):
    """get on pods is not enough: the watch lists and watches. The exporter names the missing rule."""
    cp.kubectl("create", "serviceaccount", "exp", "-n", NS)
    cp.kubectl("create", "clusterrole", "exp-get-pods", "--verb=get", "--resource=pods")
    cp.kubectl("create", "clusterrolebinding", "exp-get-pods", "--clusterrole=exp-get-pods",
               "--serviceaccount", NS + ":exp")
    token = cp.kubectl("create", "token", "exp", "-n", NS, "--duration", "1h")[1].strip()
    kc = os.path.join(cp.t, "exp.kubeconfig")
    with open(kc, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                   "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                   "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443",
                                                         "certificate-authority": os.path.join(cp.certs, "ca.crt")}}],
                   "users": [{"name": "u", "user": {"token": token}}]}, f)
    pr = PodResources(os.path.join(root, "var/lib/kubelet/pod-resources/kubelet.sock"), holders)
    ex = Exporter(cp, root, fx, ["--kubernetes-enable-pod-labels"], kc)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and "cannot watch this node's pods" not in ex.text():
            time.sleep(0.2)
        log = ex.text()
        check("cannot watch this node's pods" in log and "list" in log and "pods" in log,
              "the missing rule is named: %s" % log[-2000:])
        body = ex.wait_for(lambda b: series(b, "DCGM_FI_DEV_GPU_TEMP"), what="a series")
        check(all("app" not in l for l, _ in series(body, "DCGM_FI_DEV_GPU_TEMP")), "no pod labels without the watch")
        print("PASS a ServiceAccount without list/watch on pods: the rule named, no pod labels")
    finally:
        ex.stop()
        pr.stop()


def main():
    t0 = time.time()
    with ControlPlane() as cp:
        cp.start()
        cp.kubectl("create", "namespace", NS)
        root, fx, holders = test_pods(cp)
        test_rbac(cp, root, fx, holders)
        shutil.rmtree(root, ignore_errors=True)
    print("PASS test_k8s_exporter_pods (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        main()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
