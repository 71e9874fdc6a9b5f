#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The lighter fixture: etcd and kube-apiserver only (no kubelet, containerd or plugin), for tests that
talk to the API server itself (the Kubernetes client, src/kapi). Same peers, certificates and private
network namespace as node.py's Node, with RBAC authorization (so a narrow Role really forbids) and the
watch cache switched off for podtemplates (their watches are served by etcd itself: a 410 comes as a
watch ERROR event there, while cached resources answer it from the watch cache).

    with ControlPlane() as cp:
        cp.start()
        cp.kubectl("get", "--raw", "/readyz")
        cp.restart_apiserver()
        cp.etcd("kv/compaction", {"revision": cp.etcd_revision(), "physical": True})
"""
import base64
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import peers  # noqa: E402
from node import Node, NodeError, _certs  # noqa: E402


class ControlPlane(Node):
    authorization_mode = "RBAC"
    apiserver_flags = ("--watch-cache-sizes=podtemplates#0",)

    def start(self):
        from helm_lib import fetch as fetch_k8stools
        self.bins = dict(peers.kubernetes())
        self.bins.update(peers.etcd())
        self.bins["kubectl"] = fetch_k8stools()[1]
        self.certs = os.path.join(self.t, "pki")
        _certs(self.certs)
        self._netns()
        self._etcd()
        self._apiserver()
        return self

    def _netns(self):
        """A private network namespace (and mount namespace, as Node.ns() enters both) with lo up."""
        os.makedirs(os.path.join(self.t, "etcd"), exist_ok=True)
        self.holder = subprocess.Popen(["unshare", "-m", "-n", "--propagation", "private", "sh", "-c",
                                        "set -e; ip link set lo up; echo ready; exec sleep 86400"],
                                       stdout=subprocess.PIPE,
                                       stderr=open(os.path.join(self.logs, "netns.log"), "w"), text=True)
        if self.holder.stdout.readline().strip() != "ready":
            raise NodeError("namespace setup failed: %s" % open(os.path.join(self.logs, "netns.log")).read())

    def restart_apiserver(self):
        """kube-apiserver stopped (SIGTERM: its watches end) and started again on the same etcd."""
        self.stop_apiserver()
        self._apiserver()

    def stop_apiserver(self):
        self.stop_proc("kube-apiserver")

    def start_apiserver(self):
        self._apiserver()

    def etcd(self, call, body):
        """etcd's v3 JSON gateway (POST /v3/<call>), from inside the namespace; keys and values are
        given as text and sent base64 as the gateway wants."""
        body = dict(body)
        for k in ("key", "value", "range_end"):
            if k in body:
                body[k] = base64.b64encode(body[k].encode()).decode()
        p = subprocess.run(self.ns(["curl", "-sS", "--max-time", "20", "-X", "POST", "--data-binary", "@-",
                                    "http://127.0.0.1:2379/v3/" + call]),
                           input=json.dumps(body), capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            raise NodeError("etcd %s: %s" % (call, p.stderr.strip()))
        return json.loads(p.stdout)

    def etcd_revision(self):
        return int(self.etcd("kv/range", {"key": "/registry/", "limit": 1})["header"]["revision"])
