#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The chart's API access on the test node: each DaemonSet's ServiceAccount and RBAC objects exactly as
`helm template` renders them, applied to the real API server (RBAC on: RbacNode), and that account's
credentials for gpulet running on the host: a kubeconfig with a token of the account, or the pod's own
service-account files (token, ca.crt, namespace) mounted where in-cluster clients read them inside the
node's mount namespace, with KUBERNETES_SERVICE_HOST/_PORT.

    with RbacNode() as node:
        node.start()
        kc = grant(node, "device-plugin")          # a kubeconfig of gpulet-device-plugin's token
        env = in_cluster(node, "doctor")            # env for node.ns([...]) as if in the doctor's pod

Also the chart's DaemonSets as stand-ins (run_daemonsets): the rendered objects with a busybox that sleeps
instead of gpulet (no gpulet image exists here), on the host network, without their host volumes, so that
the real DaemonSet controller and scheduler place them by the rendered affinity, tolerations and labels."""
import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import helm_lib  # noqa: E402
from node import BUSYBOX_IMAGE, NODE_NAME, Node  # noqa: E402

NS = "gpulet"
RELEASE = "gpulet"
KUBE = "1.34.0"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class RbacNode(Node):
    """The test node with kubelet's Node authorizer and RBAC (the chart's rules must be enough, and
    narrow ones must forbid)."""
    authorization_mode = "Node,RBAC"


def render(values=None):
    return helm_lib.template(values=values or {}, release=RELEASE, namespace=NS, kube_version=KUBE)


def rbac_of(docs, component):
    """The rendered ServiceAccount and (Cluster)Role(Binding)s of one component."""
    return [d for d in docs if d["kind"] in RBAC_KINDS and
            d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == component]


def apply(node, docs):
    node.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))


def ensure_ns(node):
    if node.kubectl("get", "namespace", NS, check=False)[0] != 0:
        node.kubectl("create", "namespace", NS)


def token(node, sa):
    return node.kubectl("create", "token", sa, "-n", NS, "--duration", "2h")[1].strip()


def grant(node, component, values=None, docs=None):
    """Apply the component's rendered account and rules; a kubeconfig of its token (path)."""
    ensure_ns(node)
    docs = docs or render(values)
    objs = rbac_of(docs, component)
    if not any(d["kind"] == "ServiceAccount" for d in objs):
        raise AssertionError("the chart renders no ServiceAccount for %s" % component)
    apply(node, objs)
    sa = "%s-%s" % (RELEASE, component)
    path = os.path.join(node.t, "kubeconfig-" + component)
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443",
                                                 "certificate-authority": os.path.join(node.certs, "ca.crt")}}],
           "users": [{"name": "u", "user": {"token": token(node, sa)}}],
           "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u", "namespace": NS}}]}
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def in_cluster(node, component, values=None):
    """The component's account as its pod has it: its token, the CA and the namespace written to the
    service-account dir inside the node's mount namespace (a tmpfs /run); the env of a pod."""
    grant(node, component, values)
    tok = token(node, "%s-%s" % (RELEASE, component))
    script = "set -e; mkdir -p {d}; cat > {d}/token; printf %s {ns} > {d}/namespace; cp {ca} {d}/ca.crt".format(
        d=SA_DIR, ns=NS, ca=os.path.join(node.certs, "ca.crt"))
    node_sh(node, script, stdin=tok)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update(KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT="6443")
    return env


def node_sh(node, script, stdin=None):
    import subprocess
    p = subprocess.run(node.ns(["sh", "-c", script]), input=stdin, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("sh -c %r in the node's namespace: %s" % (script, p.stderr))
    return p.stdout


def stand_in(ds):
    """A rendered DaemonSet whose pods run a sleeping busybox on the host network (no CNI here) with
    no host volumes: what schedules it (affinity, tolerations, nodeSelector, labels, service
    account) is the chart's."""
    ds = copy.deepcopy(ds)
    pod = ds["spec"]["template"]["spec"]
    pod["hostNetwork"] = True
    pod.pop("runtimeClassName", None)  # no nvidia runtime on the test node
    pod.pop("initContainers", None)
    pod["volumes"] = []
    pod["terminationGracePeriodSeconds"] = 1
    pod.pop("priorityClassName", None)
    c = pod["containers"][0]
    pod["containers"] = [{"name": c["name"], "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                          "command": ["/bin/sh", "-c", "exec sleep 86400"], "env": c.get("env", [])}]
    return ds


def run_daemonsets(node, docs, components):
    """The stand-ins of these components' DaemonSets applied; their names. The node's not-ready taint,
    which kubelet puts on at registration and the node lifecycle controller (not run here: the node has
    no CNI and would stay not-ready) takes off, is taken off first, as that controller would."""
    ensure_ns(node)
    node.kubectl("taint", "node", NODE_NAME, "node.kubernetes.io/not-ready:NoSchedule-", check=False)
    names = []
    for ds in (d for d in docs if d["kind"] == "DaemonSet"):
        comp = ds["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component")
        if comp in components:
            apply(node, [stand_in(ds)])
            names.append((comp, ds["metadata"]["name"]))
    return names


def pods_of(node, component):
    """The running (not terminating) pods of a component's DaemonSet: their names."""
    out = node.get("pods", "-n", NS, "-l", "app.kubernetes.io/component=" + component)["items"]
    return [p["metadata"]["name"] for p in out if not p["metadata"].get("deletionTimestamp") and
            p.get("status", {}).get("phase") == "Running"]
