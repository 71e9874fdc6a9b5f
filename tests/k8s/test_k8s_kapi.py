#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gpulet's Kubernetes client (src/kapi) against a real kube-apiserver 1.34 and etcd (controlplane.py,
RBAC on), driven through build/kapi_tool, judged by kubectl and the API server's own answers:

  * configuration: client certificate files and inline *-data, the in-cluster service account
    (KUBERNETES_SERVICE_HOST/_PORT, token, ca.crt, namespace), a wrong CA refused with TLS words;
    libcurl mapped only once a client is opened (lean start-up);
  * GET, LIST with label/field selectors and limit/continue paging (pages counted), create/update/
    delete with their errno (exists, stale resourceVersion, uid precondition, not found);
  * server-side apply and strategic merge of a Node status condition keep kubelet's Ready; a JSON merge
    patch replaces the list (why the client says not to use it for conditions); an Event on the Node;
  * NFD's NodeFeature (a CRD) created with an owner reference, updated and applied;
  * a ServiceAccount with a narrow Role: a 403 names the RBAC rule that is missing, for a request and
    for an informer;
  * informers: bookmarks on an idle watch, watches resumed without a relist, a kube-apiserver restart
    with objects deleted behind our back and etcd compacted (410: relist, the deletions reported), for a
    cached resource and for one served by etcd itself; the token file rotated (and the old token
    revoked) while the watch runs: the 401 makes the client re-read it; the periodic re-read.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import base64
import json
import os
import queue
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controlplane import ControlPlane  # noqa: E402
from node import BUILD, NodeError  # noqa: E402
from podcheck import check  # noqa: E402

TOOL = os.path.join(BUILD, "kapi_tool")
HERE = os.path.dirname(os.path.abspath(__file__))
NS = "kapi"
SERVER = "https://127.0.0.1:6443"
ENOENT, EEXIST, EACCES, ESTALE, EKEYREJECTED = 2, 17, 13, 116, 129


def tool(cp, *args, kubeconfig=None, env=None, stdin=None, ok=True):
    """(exit status, the JSON lines of stdout, stderr) of one kapi_tool call inside the namespace."""
    argv = [TOOL, "--kubeconfig", kubeconfig or cp.admin_kubeconfig, *args] if kubeconfig != "" else [TOOL, *args]
    p = subprocess.run(cp.ns(argv), input=stdin, capture_output=True, text=True, timeout=120,
                       env=dict(env or os.environ))
    out = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if ok and p.returncode != 0:
        raise NodeError("kapi_tool %s: rc %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p.returncode, out, p.stderr


def stats(stderr):
    return [json.loads(line)["stats"] for line in stderr.splitlines() if line.startswith('{"stats"')][-1]


def kubectl_json(cp, *args):
    return json.loads(cp.kubectl(*args, "-o", "json")[1])


def write(cp, name, obj):
    path = os.path.join(cp.t, name)
    with open(path, "w") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def kubeconfig(cp, name, user, ca=None):
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u", "namespace": NS}}],
           "clusters": [{"name": "k", "cluster": {"server": SERVER,
                                                 "certificate-authority": ca or os.path.join(cp.certs, "ca.crt")}}],
           "users": [{"name": "u", "user": user}]}
    return write(cp, name, cfg)


def sa_token(cp, sa, secret=None):
    args = ["create", "token", sa, "-n", NS, "--duration", "1h"]
    if secret:
        args += ["--bound-object-kind", "Secret", "--bound-object-name", secret]
    return cp.kubectl(*args)[1].strip()


def grant(cp, sa, resources, verbs="get,list,watch"):
    """A Role in NS for the ServiceAccount sa (the aggregated view role needs kube-controller-manager,
    which this control plane does not run)."""
    cp.kubectl("create", "role", sa, "-n", NS, "--verb=" + verbs, "--resource=" + resources)
    cp.kubectl("create", "rolebinding", sa, "-n", NS, "--role=" + sa, "--serviceaccount", NS + ":" + sa)


class Watcher:
    """kapi_tool watch: its JSON lines collected by a thread; commands sent on its stdin."""

    def __init__(self, cp, *args, kubeconfig=None, extra=()):
        self.lines = queue.Queue()
        self.seen = []
        self.status = {}
        self.p = subprocess.Popen(cp.ns([TOOL, "--kubeconfig", kubeconfig or cp.admin_kubeconfig, *extra, "watch",
                                         *args]), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(os.path.join(cp.logs, "kapi-watch-%s.log" % args[0].replace("/", "_")), "a"), text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def send(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()

    def _next(self, pred, deadline):
        while time.time() < deadline:
            try:
                line = self.lines.get(timeout=max(0.05, deadline - time.time()))
            except queue.Empty:
                return None
            if line is None:
                raise NodeError("kapi_tool watch exited (rc %s)" % self.p.wait())
            self.seen.append(line)
            if "status" in line:
                self.status = line["status"]
            if pred(line):
                return line
        return None

    def wait(self, what, pred, timeout=60):
        """Read lines until pred(line) is true for one; every line is kept in self.seen."""
        line = self._next(pred, time.time() + timeout)
        if line is None:
            raise NodeError("timed out waiting for %s; last status %s; lines %s" % (what, self.status,
                                                                                     self.seen[-8:]))
        return line

    def wait_status(self, what, pred, timeout=60):
        """Ask for the informer's status every half second until pred(status)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.send("status")
            line = self._next(lambda line: "status" in line and pred(line["status"]), time.time() + 0.5)
            if line:
                return line["status"]
        raise NodeError("timed out waiting for %s; last status %s" % (what, self.status))

    def ask(self, cmd, key, timeout=60):
        self.send(cmd)
        line = self.wait(cmd, lambda line: key in line or key + "_error" in line, timeout)
        if key not in line:
            raise NodeError("%s: %s" % (cmd, line))
        return line

    def stop(self):
        self.p.stdin.close()
        rc = self.p.wait(30)
        check(rc == 0, "kapi_tool watch exit status %d" % rc)


def change(key, deleted=False):
    return lambda line: line.get("key") == key and line.get("deleted") == deleted


# -- configuration -------------------------------------------------------------------------------
def test_config(cp):
    rc, out, _ = tool(cp, "maps")
    check(out[0]["open"] == 0 and not out[0]["before"] and out[0]["after"],
          "libcurl is mapped by kapi_open and not before: %s" % out)
    # inline certificate data (CAINFO/SSLCERT/SSLKEY blobs) instead of files
    data = {}
    for key, f in (("client-certificate-data", "admin.crt"), ("client-key-data", "admin.key")):
        with open(os.path.join(cp.certs, f), "rb") as fh:
            data[key] = base64.b64encode(fh.read()).decode()
    with open(os.path.join(cp.certs, "ca.crt"), "rb") as fh:
        ca = base64.b64encode(fh.read()).decode()
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
           "clusters": [{"name": "k", "cluster": {"server": SERVER + "/", "certificate-authority-data": ca}}],
           "users": [{"name": "u", "user": data}]}
    inline = write(cp, "inline.kubeconfig", cfg)
    rc, out, _ = tool(cp, "get", "v1/namespaces", "-", NS, kubeconfig=inline)
    check(out[0]["metadata"]["name"] == NS, "GET with inline certificate data: %s" % out)
    # a CA that did not sign the server's certificate: refused, with TLS words
    other = os.path.join(cp.t, "other-ca")
    os.makedirs(other)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=other"], cwd=other,
                   check=True, capture_output=True)
    wrong = kubeconfig(cp, "wrong-ca.kubeconfig", {"client-certificate": os.path.join(cp.certs, "admin.crt"),
                                                   "client-key": os.path.join(cp.certs, "admin.key")},
                       ca=os.path.join(other, "ca.crt"))
    rc, out, err = tool(cp, "get", "v1/namespaces", "-", NS, kubeconfig=wrong, ok=False)
    check(rc == 1 and "TLS with the API server at %s failed" % SERVER in err and "other-ca/ca.crt" in err,
          "a CA that did not sign the server: rc %d %s" % (rc, err))
    print("PASS config: certificate files, inline data, wrong CA refused (%s)" % err.splitlines()[0][:120])


def test_in_cluster(cp):
    """The pod's view: KUBERNETES_SERVICE_HOST/_PORT and the service account directory."""
    sa_dir = os.path.join(cp.t, "serviceaccount")
    os.makedirs(sa_dir)
    cp.kubectl("create", "serviceaccount", "incluster", "-n", NS)
    grant(cp, "incluster", "configmaps")
    write(cp, "serviceaccount/token", sa_token(cp, "incluster") + "\n")
    write(cp, "serviceaccount/namespace", NS)
    with open(os.path.join(cp.certs, "ca.crt")) as f:
        write(cp, "serviceaccount/ca.crt", f.read())
    env = dict(os.environ, KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT="6443")
    env.pop("KUBECONFIG", None)
    rc, out, _ = tool(cp, "--sa-dir", sa_dir, "config", kubeconfig="", env=env)
    check(out[0] == {"server": SERVER, "namespace": NS}, "in-cluster config: %s" % out)
    rc, out, _ = tool(cp, "--sa-dir", sa_dir, "whoami", kubeconfig="", env=env)
    check(out[0].get("whoami") == "system:serviceaccount:%s:incluster" % NS, "in-cluster identity: %s" % out)
    rc, out, _ = tool(cp, "--sa-dir", sa_dir, "list", "configmaps", NS, kubeconfig="", env=env)
    check(out[0]["kind"] == "ConfigMapList", "in-cluster LIST: %s" % out)
    print("PASS in-cluster: service account token, CA and namespace; identity %s" % "incluster")


# -- requests ------------------------------------------------------------------------------------
def test_get_list(cp):
    items = [{"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "page-%02d" % i, "namespace": NS, "labels": {"kapi": "page"}},
              "data": {"i": str(i)}} for i in range(25)]
    cp.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    rc, out, err = tool(cp, "list", "configmaps", NS, "--label", "kapi=page", "--limit", "4")
    names = [i["metadata"]["name"] for i in out[0]["items"]]
    want = sorted(i["metadata"]["name"] for i in kubectl_json(cp, "get", "configmaps", "-n", NS, "-l",
                                                               "kapi=page")["items"])
    check(sorted(names) == want and len(names) == 25, "LIST with limit 4: %s" % names)
    check(stats(err)["requests"] == 7, "25 objects in pages of 4 are 7 requests: %s" % stats(err))
    check("continue" not in out[0]["metadata"] and out[0]["metadata"].get("resourceVersion"),
          "the joined list: %s" % out[0]["metadata"])
    rc, out, _ = tool(cp, "list", "configmaps", NS, "--field", "metadata.name=page-07", "--label", "kapi=page")
    check([i["metadata"]["name"] for i in out[0]["items"]] == ["page-07"], "field selector: %s" % out)
    rc, out, _ = tool(cp, "get", "configmaps", NS, "page-03")
    check(out[0]["data"] == {"i": "3"}, "GET: %s" % out)
    rc, out, err = tool(cp, "get", "configmaps", NS, "missing", ok=False)
    check(rc == 1 and out[-1]["errno"] == ENOENT and
          'cannot get configmaps kapi/missing: configmaps "missing" not found (NotFound, HTTP 404)' in err,
          "GET of a missing object: %s %s" % (out, err))
    print("PASS GET/LIST: 25 objects in 7 pages, selectors, 404 -> ENOENT")


def test_writes(cp):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w", "namespace": NS}, "data": {"a": "1"}}
    path = write(cp, "cm.json", cm)
    rc, out, _ = tool(cp, "create", "configmaps", NS, path)
    first = out[0]
    check(any(m["manager"] == "gpulet" for m in first["metadata"]["managedFields"]), "fieldManager gpulet")
    rc, out, err = tool(cp, "create", "configmaps", NS, path, ok=False)
    check(rc == 1 and out[-1]["errno"] == EEXIST and "AlreadyExists" in err, "create twice: %s %s" % (out, err))
    upd = dict(first, data={"a": "2"})
    rc, out, _ = tool(cp, "update", "configmaps", NS, "w", "-", write(cp, "u.json", upd))
    rc, out, err = tool(cp, "update", "configmaps", NS, "w", "-", write(cp, "u.json", dict(upd, data={"a": "3"})),
                        ok=False)
    check(rc == 1 and out[-1]["errno"] == ESTALE and "Conflict" in err, "update from a stale copy: %s" % err)
    rc, out, err = tool(cp, "delete", "configmaps", NS, "w", "--uid", "00000000-0000-0000-0000-000000000000",
                        ok=False)
    check(rc == 1 and out[-1]["errno"] == ESTALE and "the UID in the precondition" in err, "delete with another uid: %s" % err)
    check(cp.kubectl("get", "configmap", "w", "-n", NS, check=False)[0] == 0, "the object is still there")
    tool(cp, "delete", "configmaps", NS, "w", "--uid", first["metadata"]["uid"])
    rc, out, err = tool(cp, "delete", "configmaps", NS, "w", ok=False)
    check(rc == 1 and out[-1]["errno"] == ENOENT, "delete twice: %s" % err)
    print("PASS create/update/delete: fieldManager, EEXIST, ESTALE on a stale update and a uid precondition, ENOENT")


def test_node_status(cp):
    """A condition of our own on a Node whose Ready condition kubelet owns."""
    cp.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "Node",
                                                     "metadata": {"name": "kapi-node"}}))
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
             "lastHeartbeatTime": "2025-01-01T00:00:00Z", "lastTransitionTime": "2025-01-01T00:00:00Z"}
    cp.kubectl("patch", "node", "kapi-node", "--subresource=status", "--type=strategic", "--field-manager=kubelet",
               "-p", json.dumps({"status": {"conditions": [ready]}}))

    def conditions():
        return {c["type"]: c for c in kubectl_json(cp, "get", "node", "kapi-node")["status"].get("conditions", [])}

    gpu = {"type": "GPUHealthy", "status": "False", "reason": "XID79",
           "message": "GPU-6a5d0c38 (index 3) fell off the bus", "lastTransitionTime": "2025-01-01T00:01:00Z"}
    apply = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "kapi-node"}, "status": {"conditions": [gpu]}}
    tool(cp, "patch", "nodes", "-", "kapi-node", "status", "apply-force", write(cp, "apply.json", apply))
    c = conditions()
    check(c.get("Ready", {}).get("status") == "True" and c.get("GPUHealthy", {}).get("reason") == "XID79",
          "server-side apply of a condition: %s" % c)
    mf = [m for m in kubectl_json(cp, "get", "node", "kapi-node", "--show-managed-fields")["metadata"]["managedFields"]
          if m["manager"] == "gpulet"]
    check(mf and mf[0]["operation"] == "Apply" and mf[0].get("subresource") == "status", "managedFields %s" % mf)
    gpu_ok = dict(gpu, status="True", reason="AllGPUsHealthy", message="8 GPUs healthy")
    tool(cp, "patch", "nodes", "-", "kapi-node", "status", "strategic",
         write(cp, "smp.json", {"status": {"conditions": [gpu_ok]}}))
    c = conditions()
    check(c.get("Ready", {}).get("status") == "True" and c.get("GPUHealthy", {}).get("status") == "True",
          "strategic merge of a condition: %s" % c)
    # a JSON merge patch replaces the whole list: kubelet's Ready is gone (hence kapi.h's advice)
    tool(cp, "patch", "nodes", "-", "kapi-node", "status", "merge",
         write(cp, "mp.json", {"status": {"conditions": [gpu]}}))
    check(set(conditions()) == {"GPUHealthy"}, "a merge patch replaced the list: %s" % conditions())
    # an Event on the Node, as kubectl describe node shows it
    uid = kubectl_json(cp, "get", "node", "kapi-node")["metadata"]["uid"]
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"generateName": "kapi-node.", "namespace": "default"},
          "involvedObject": {"kind": "Node", "name": "kapi-node", "uid": uid, "apiVersion": "v1"},
          "reason": "GPUUnhealthy", "message": "GPU-6a5d0c38 (index 3): XID 79", "type": "Warning",
          "source": {"component": "gpulet", "host": "kapi-node"}, "count": 1,
          "firstTimestamp": "2025-01-01T00:01:00Z", "lastTimestamp": "2025-01-01T00:01:00Z"}
    tool(cp, "create", "events", "default", write(cp, "ev.json", ev))
    evs = kubectl_json(cp, "get", "events", "-n", "default", "--field-selector", "involvedObject.name=kapi-node")
    check([(e["reason"], e["source"]["component"]) for e in evs["items"]] == [("GPUUnhealthy", "gpulet")],
          "the Event: %s" % evs["items"])
    print("PASS Node status: apply and strategic merge keep Ready, merge patch replaces the list; Event created")


def test_nodefeature(cp):
    cp.kubectl("apply", "-f", os.path.join(HERE, "data", "nodefeature-crd.yaml"))
    cp.wait("NodeFeature CRD established", lambda: cp.kubectl(
        "wait", "--for=condition=Established", "crd/nodefeatures.nfd.k8s-sigs.io", "--timeout=5s",
        check=False)[0] == 0, timeout=60)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpulet-labels-x", "namespace": NS},
           "spec": {"containers": [{"name": "c", "image": "none"}]}}
    cp.kubectl("apply", "-f", "-", stdin=json.dumps(pod))
    uid = kubectl_json(cp, "get", "pod", "gpulet-labels-x", "-n", NS)["metadata"]["uid"]
    nf = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
          "metadata": {"name": "nvidia-features-for-kapi-node", "namespace": NS,
                       "labels": {"nfd.node.kubernetes.io/node-name": "kapi-node"},
                       "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "gpulet-labels-x", "uid": uid}]},
          "spec": {"labels": {"nvidia.com/gpu.count": "8", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}}}
    rc, out, _ = tool(cp, "create", "nodefeatures", NS, write(cp, "nf.json", nf))
    got = kubectl_json(cp, "get", "nodefeature", "nvidia-features-for-kapi-node", "-n", NS)
    check(got["metadata"]["ownerReferences"][0]["uid"] == uid and got["spec"]["labels"] == nf["spec"]["labels"],
          "NodeFeature with its owner: %s" % got)
    nf["spec"]["labels"]["nvidia.com/gpu.count"] = "7"
    tool(cp, "patch", "nodefeatures", NS, nf["metadata"]["name"], "-", "apply-force", write(cp, "nf.json", nf))
    got = kubectl_json(cp, "get", "nodefeature", "nvidia-features-for-kapi-node", "-n", NS)
    check(got["spec"]["labels"]["nvidia.com/gpu.count"] == "7", "NodeFeature applied: %s" % got["spec"])
    print("PASS NodeFeature (CRD nfd.k8s-sigs.io/v1alpha1): created with an owner reference, applied")


def test_forbidden(cp):
    cp.kubectl("create", "serviceaccount", "narrow", "-n", NS)
    grant(cp, "narrow", "configmaps", verbs="get")
    kc = kubeconfig(cp, "narrow.kubeconfig", {"token": sa_token(cp, "narrow")})
    rc, out, _ = tool(cp, "get", "configmaps", NS, "page-01", kubeconfig=kc)
    rc, out, err = tool(cp, "list", "resourceslices", "-", kubeconfig=kc, ok=False)
    want = ('cannot list resourceslices.resource.k8s.io at cluster scope: RBAC needs {apiGroups: '
            '["resource.k8s.io"], resources: [resourceslices], verbs: [list]}')
    check(rc == 1 and out[-1]["errno"] == EACCES and want in err and
          'User "system:serviceaccount:kapi:narrow" cannot list' in err, "403: %s" % err)
    rc, out, err = tool(cp, "patch", "nodes", "-", "kapi-node", "status", "apply-force",
                        write(cp, "a.json", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "kapi-node"}}),
                        kubeconfig=kc, ok=False)
    check('RBAC needs {apiGroups: [""], resources: [nodes/status], verbs: [patch]}' in err, "403 on patch: %s" % err)
    w = Watcher(cp, "configmaps", NS, kubeconfig=kc)
    st = w.wait_status("the informer's 403", lambda s: s["error"] == EACCES)
    check("RBAC needs {apiGroups: [\"\"], resources: [configmaps], verbs: [list]} in namespace kapi" in st["message"]
          and not st["synced"], "informer's 403: %s" % st)
    w.stop()
    print("PASS 403: %s" % err.splitlines()[0][:160])


# -- watches -------------------------------------------------------------------------------------
def test_watches(cp):
    """Bookmarks, resumed watches, an API server restart with deletions behind our back and a compacted
    etcd (410), token rotation while watching."""
    cp.kubectl("create", "serviceaccount", "watcher", "-n", NS)
    grant(cp, "watcher", "configmaps")
    for s in ("sec-a", "sec-b"):
        cp.kubectl("create", "secret", "generic", s, "-n", NS)
    token_a = sa_token(cp, "watcher", "sec-a")
    token_file = write(cp, "watcher.token", token_a)
    kc = kubeconfig(cp, "watcher.kubeconfig", {"tokenFile": token_file})
    # W1: a cached resource, each watch ended by the server after 4-8 s (bookmark 2 s before)
    w1 = Watcher(cp, "configmaps", NS, "--label", "kapi=watch", "--watch-timeout", "4", kubeconfig=kc,
                 extra=("--token-period", "3600"))
    # W2: podtemplates, whose watches etcd serves (watch cache off)
    w2 = Watcher(cp, "podtemplates", NS, "--watch-timeout", "4")
    for w in (w1, w2):
        w.wait_status("synced", lambda s: s["synced"])
    cm = lambda name: json.dumps({"apiVersion": "v1", "kind": "ConfigMap",  # noqa: E731
                                  "metadata": {"name": name, "namespace": NS, "labels": {"kapi": "watch"}}})
    pt = lambda name: json.dumps({"apiVersion": "v1", "kind": "PodTemplate",  # noqa: E731
                                  "metadata": {"name": name, "namespace": NS},
                                  "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}})
    cp.kubectl("apply", "-f", "-", stdin=cm("w1"))
    cp.kubectl("apply", "-f", "-", stdin=pt("p1"))
    w1.wait("w1 added", change("kapi/w1"))
    w2.wait("p1 added", change("kapi/p1"))
    st = w1.wait_status("bookmarks and resumed watches", lambda s: s["bookmarks"] >= 1 and s["watches"] >= 3, 60)
    check(st["lists"] == 1 and st["expired"] == 0, "idle watches resume without a relist: %s" % st)
    rv_before = st["resourceVersion"]

    # the token is rotated (B) and the old one (A) revoked while the watch runs
    write(cp, "watcher.token", sa_token(cp, "watcher", "sec-b"))
    cp.kubectl("delete", "secret", "sec-a", "-n", NS)
    static_a = kubeconfig(cp, "a.kubeconfig", {"token": token_a})
    cp.wait("token A revoked", lambda: tool(cp, "whoami", kubeconfig=static_a, ok=False)[1][-1].get("whoami_error")
            == EKEYREJECTED, timeout=60)

    # kube-apiserver stops; behind our back w1 and p1 go, etcd moves on and is compacted
    cp.stop_apiserver()
    for key in ("/registry/configmaps/%s/w1" % NS, "/registry/podtemplates/%s/p1" % NS):
        check(cp.etcd("kv/deleterange", {"key": key}).get("deleted") == "1", "%s deleted in etcd" % key)
    cp.etcd("kv/put", {"key": "/gpulet-test/moved-on", "value": "1"})
    rev = cp.etcd_revision()
    cp.etcd("kv/compaction", {"revision": rev, "physical": True})
    for w in (w1, w2):
        w.wait_status("a failed reconnect", lambda s: s["failures"] >= 1, 60)
    cp.start_apiserver()
    cp.kubectl("apply", "-f", "-", stdin=cm("w2"))
    cp.kubectl("apply", "-f", "-", stdin=pt("p2"))
    for w, what, gone, new in ((w1, "configmaps (watch cache)", "kapi/w1", "kapi/w2"),
                               (w2, "podtemplates (etcd)", "kapi/p1", "kapi/p2")):
        w.wait("%s reported deleted after the relist" % gone, change(gone, deleted=True), 120)
        w.wait("%s added" % new, change(new), 60)
        st = w.wait_status("relisted", lambda s: s["lists"] >= 2 and s["expired"] >= 1 and s["error"] == 0, 60)
        keys = w.ask("keys", "keys")["keys"]
        check(sorted(keys) == [new.split("/")[1]], "the cache after the relist: %s" % keys)
        got, gone_obj = w.ask("get " + new, "get").get("obj"), w.ask("get " + gone, "get").get("obj")
        check(got and got["metadata"]["name"] == new.split("/")[1] and gone_obj is None,
              "the cache by key after the relist: %s has %s, %s has %s" % (new, got, gone, gone_obj))
        print("PASS watch of %s survived the restart: 410 -> relist, deletion reported, cache %s; %s"
              % (what, keys, st))
    check(int(st["resourceVersion"]) > int(rv_before), "resourceVersion moved on: %s" % st)
    # the client's requests after the restart met token A's 401, re-read the file and went on with B
    who = w1.ask("whoami", "whoami")
    check(who["whoami"] == "system:serviceaccount:%s:watcher" % NS, "identity after rotation: %s" % who)
    s = w1.ask("stats", "stats")["stats"]
    check(s["retries"] >= 1 and s["token_reads"] >= 1, "the 401 re-read the token: %s" % s)
    w1.stop()
    w2.stop()
    print("PASS token rotated and revoked during the watch: 401 -> re-read -> retried (%s)" % s)


def test_token_period(cp):
    """The token file is re-read after --token-period, without a 401."""
    for sa in ("who-x", "who-y"):
        cp.kubectl("create", "serviceaccount", sa, "-n", NS)
    token_file = write(cp, "period.token", sa_token(cp, "who-x"))
    kc = kubeconfig(cp, "period.kubeconfig", {"tokenFile": token_file})
    w = Watcher(cp, "v1/namespaces", "-", "--field", "metadata.name=" + NS, kubeconfig=kc,
                extra=("--token-period", "1"))
    check(w.ask("whoami", "whoami")["whoami"].endswith(":who-x"), "first identity")
    write(cp, "period.token", sa_token(cp, "who-y"))
    time.sleep(1.5)  # longer than the period: the next request reads the file again
    check(w.ask("whoami", "whoami")["whoami"].endswith(":who-y"), "identity after the period")
    st = w.ask("status", "status")["status"]
    check(st["error"] == EACCES, "who-x/who-y may not list namespaces: the informer says so: %s" % st)
    w.stop()
    print("PASS token re-read after its period (who-x -> who-y)")


def main():
    t0 = time.time()
    with ControlPlane() as cp:
        cp.start()
        print("control plane up in %.1fs" % (time.time() - t0))
        cp.kubectl("create", "namespace", NS)
        for t in (test_config, test_in_cluster, test_get_list, test_writes, test_node_status, test_nodefeature,
                  test_forbidden, test_token_period, test_watches):
            t(cp)
    print("PASS test_k8s_kapi (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        main()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
