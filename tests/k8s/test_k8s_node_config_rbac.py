#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The chart's RBAC for per-node configs (templates/rbac.yaml: each pod's one ServiceAccount holds the
union of its features' rules, gpulet.apiRules) is enough, and needed, on a real kube-apiserver with RBAC
on (controlplane.py): the objects `helm template` renders for a release with several configs are
applied, and gpulet config-manager runs with the token of the MPS daemons' ServiceAccount (per-node
configs are its only feature: their rules alone) and of the plugin's (node health's rules with them). It reads its Node (a watch with metadata.name=<node>), links the config the label
names, and when the label names one that does not exist writes the Warning Event on the Node in
"default" (the API's namespace for a cluster-scoped object's Events). A ServiceAccount the chart did
not bind gets a 403 that names the rule it misses.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import helm_lib  # noqa: E402
from controlplane import ControlPlane  # noqa: E402
from node import GPULET, NodeError  # noqa: E402
from podcheck import check  # noqa: E402

NS = "gpulet"
NODE = "gpu-node-1"
LABEL = "nvidia.com/device-plugin.config"


def kubeconfig(cp, name, token):
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u", "namespace": NS}}],
           "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443",
                                                 "certificate-authority": os.path.join(cp.certs, "ca.crt")}}],
           "users": [{"name": "u", "user": {"token": token}}]}
    path = os.path.join(cp.t, name)
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def config_manager(cp, kc, srcdir, dst):
    p = subprocess.run(cp.ns([GPULET, "config-manager", "--oneshot", "--kubeconfig", kc, "--node-name", NODE,
                              "--config-file-srcdir", srcdir, "--config-file-dst", dst, "--send-signal=false",
                              "--fallback-strategies", "named"]), capture_output=True, text=True, timeout=120)
    return p.returncode, p.stderr


def test_rbac():
    t0 = time.time()
    docs = helm_lib.template(values={"config": {"map": {"default": "version: v1\n", "ts2": "version: v1\n"}},
                                     "gfd": {"enabled": True}}, namespace=NS)
    rbac = [d for d in docs if d["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                                             "RoleBinding")]
    sas = sorted(d["metadata"]["name"] for d in rbac if d["kind"] == "ServiceAccount")
    check(sas == ["gpulet-" + c for c in ("device-plugin", "doctor", "gpu-feature-discovery", "mps-control-daemon")],
          "one ServiceAccount per pod that calls the API server: %s" % sas)
    with ControlPlane() as cp:
        cp.start()
        cp.kubectl("create", "namespace", NS)
        cp.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": rbac}))
        cp.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": NODE, "labels": {LABEL: "ts2"}}}))
        srcdir = os.path.join(cp.t, "configs")
        os.makedirs(srcdir)
        for k in ("default", "ts2"):
            with open(os.path.join(srcdir, k), "w") as f:
                f.write("version: v1\n")
        dst = os.path.join(cp.t, "config.yaml")
        for comp in ("device-plugin", "mps-control-daemon"):
            token = cp.kubectl("create", "token", "gpulet-" + comp, "-n", NS, "--duration", "1h")[1].strip()
            kc = kubeconfig(cp, comp + ".kubeconfig", token)
            if os.path.lexists(dst):
                os.unlink(dst)
            rc, err = config_manager(cp, kc, srcdir, dst)
            check(rc == 0 and os.readlink(dst) == os.path.join(srcdir, "ts2"),
                  "ts2 with the chart's RBAC of %s: rc %d %s" % (comp, rc, err))
            print("PASS the %s ServiceAccount reads its Node through a watch: the label's config linked" % comp)

        # nothing in place yet and the label names no config: the default, and the Event on the Node
        os.unlink(dst)
        cp.kubectl("label", "node", NODE, "--overwrite", LABEL + "=nope")
        rc, err = config_manager(cp, kc, srcdir, dst)
        check(rc == 0 and os.readlink(dst) == os.path.join(srcdir, "default"), "fallback: rc %d %s" % (rc, err))
        check("Cannot tell the node" not in err, "the Event was refused: %s" % err)
        ev = cp.get("events", "-n", "default", "--field-selector", "involvedObject.name=" + NODE)["items"]
        check([e for e in ev if e["reason"] == "ConfigNotApplied" and e["type"] == "Warning" and
               e["involvedObject"]["kind"] == "Node" and e["involvedObject"].get("uid") and "nope" in e["message"] and
               e["source"]["component"] == "gpulet-config-manager"], "the Warning Event on the Node: %s" % ev)
        print("PASS a label naming no config: the default linked, a Warning Event on the Node in 'default'")

        # a ServiceAccount the chart did not bind: the 403 names the rule
        cp.kubectl("create", "serviceaccount", "stranger", "-n", NS)
        kc2 = kubeconfig(cp, "stranger.kubeconfig",
                         cp.kubectl("create", "token", "stranger", "-n", NS, "--duration", "1h")[1].strip())
        p = subprocess.run(cp.ns([GPULET, "config-manager", "--oneshot", "--kubeconfig", kc2, "--node-name", NODE,
                                  "--config-file-srcdir", srcdir, "--config-file-dst", dst]),
                           capture_output=True, text=True, timeout=200)
        check(p.returncode == 1 and "resources: [nodes], verbs: [list]" in p.stderr,
              "an unbound ServiceAccount: rc %d %s" % (p.returncode, p.stderr[-1500:]))
        print("PASS an unbound ServiceAccount: exit 1, the message names the RBAC rule it misses")
    print("PASS test_node_config_rbac (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_rbac()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
