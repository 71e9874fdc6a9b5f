#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The chart's DRA objects (deploy/helm/gpulet with dra.enabled, `helm template` for this node's 1.34)
applied to a real kube-apiserver with the Node and RBAC authorizers (tests/k8s/node.py), and
`gpulet dra` running with nothing but the chart's service account (docs/reference/dra.md §13):

  * with a token bound to a pod on the node (what kubelet projects into the DaemonSet's pod), gpulet
    dra lists and watches its node's slices and its Node, publishes its pool, GETs the claim of a pod
    and prepares it: the pod runs — the ClusterRole's rules are enough;
  * they are no more than needed: the same token cannot list pods or read Secrets, and the chart's
    ValidatingAdmissionPolicy refuses it a ResourceSlice of another node, while its own node's is
    accepted;
  * NVIDIA's DeviceClasses as the chart renders them select gpulet's devices.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import helm_lib  # noqa: E402
from dralib import (BUSYBOX_IMAGE, NODE_NAME, Node, apply, check, claim, dra_args, pod, pool, request,  # noqa: E402
                    timed, wait_running)

NS = "gpu-system"
ATTR = "device.attributes['gpu.nvidia.com']"


class RbacNode(Node):
    authorization_mode = "Node,RBAC"


def chart_objects():
    docs = helm_lib.template(sets=["dra.enabled=true"], namespace=NS, kube_version="1.34.0")
    kinds = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
             "ValidatingAdmissionPolicyBinding", "DeviceClass")
    return [d for d in docs if d["kind"] in kinds and (d["kind"] == "DeviceClass" or d["metadata"]["name"].endswith("-dra")
                                                       or "-dra-" in d["metadata"]["name"])]


def token_kubeconfig(node, token):
    path = os.path.join(node.t, "dra.kubeconfig")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                   "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443",
                                                         "certificate-authority": os.path.join(node.certs, "ca.crt")}}],
                   "users": [{"name": "u", "user": {"token": token}}],
                   "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}, f)
    return path


def as_dra(node, kubeconfig, *args, stdin=None):
    """kubectl with the DRA driver's credentials."""
    import subprocess
    p = subprocess.run(node.ns([node.bins["kubectl"], "--kubeconfig", kubeconfig, *args]), capture_output=True,
                       text=True, input=stdin, timeout=60)
    return p.returncode, p.stdout + p.stderr


def main():
    t0 = time.time()
    with RbacNode() as node:
        node.start(control_plane=True, plugin=False)
        node.kubectl("create", "namespace", NS)
        objs = chart_objects()
        check(sorted(o["kind"] for o in objs) == sorted(["ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                                         "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                                                         "DeviceClass", "DeviceClass"]), "objects: %s" % [o["kind"] for o in objs])
        apply(node, *objs)
        sa = next(o for o in objs if o["kind"] == "ServiceAccount")["metadata"]["name"]
        # what kubelet does for the DaemonSet's pod: a token bound to a pod on this node
        apply(node, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dra-holder", "namespace": NS},
                     "spec": {"nodeName": NODE_NAME, "serviceAccountName": sa, "automountServiceAccountToken": False,
                              "hostNetwork": True, "tolerations": [{"operator": "Exists"}],
                              "containers": [{"name": "c", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                                              "command": ["sleep", "3600"]}]}})
        token = node.kubectl("create", "token", sa, "-n", NS, "--bound-object-kind", "Pod",
                             "--bound-object-name", "dra-holder", "--duration", "1h")[1].strip()
        kc = token_kubeconfig(node, token)
        timed("node with the Node and RBAC authorizers, the chart's DRA RBAC, policy and DeviceClasses applied", t0)

        t = time.time()
        args = dra_args(node)
        args[args.index("--kubeconfig") + 1] = kc
        node.spawn("dra", args, env=node.plugin_env())
        node.wait("gpulet dra publishes with the chart's service account", lambda: len(pool(node)) == 13, timeout=60,
                  proc="dra")
        apply(node, claim("c1", [request("gpu", cel=ATTR + ".index == 3")]), pod("p1", "ls /dev | grep '^nvidia[0-9]'",
                                                                                claim_name="c1"))
        log = wait_running(node, "p1")
        check(log.split("PROBE-DONE")[0].split() == ["nvidia3"], "p1: %r" % log)
        timed("gpulet dra with only the chart's rules: pool published, a claim prepared, its pod runs", t)

        t = time.time()
        for what in (("get", "pods", "-A"), ("get", "secrets", "-n", NS), ("get", "resourceclaims", "-A")):
            rc, out = as_dra(node, kc, *what)
            check(rc != 0 and "forbidden" in out.lower(), "%s allowed: %s" % (" ".join(what), out))
        mine = json.loads(node.kubectl("get", "resourceslices", "-o", "json")[1])["items"][0]
        other = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"generateName": "x-"},
                 "spec": {"driver": "gpu.nvidia.com", "nodeName": "other-node",
                          "pool": {"name": "other-node", "generation": 1, "resourceSliceCount": 1}, "devices": []}}
        rc, out = as_dra(node, kc, "create", "-f", "-", stdin=json.dumps(other))
        check(rc != 0 and "may write only that node's ResourceSlices" in out, "another node's slice: %s" % out)
        other["spec"]["nodeName"] = other["spec"]["pool"]["name"] = NODE_NAME
        other["spec"]["driver"] = "test.example.com"
        rc, out = as_dra(node, kc, "create", "-f", "-", stdin=json.dumps(other))
        check(rc == 0, "its own node's slice refused: %s" % out)
        rc, out = as_dra(node, kc, "delete", "resourceslice", mine["metadata"]["name"], "--dry-run=server")
        check(rc == 0, "its own slice cannot be deleted: %s" % out)
        timed("no more than needed: no pods, secrets or claim lists; another node's slice refused by the policy", t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
