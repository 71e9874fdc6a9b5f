#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A real Kubernetes node for the tests: etcd, kube-apiserver, kubelet and containerd (CRI, CDI on),
built by peers.py, with gpulet's plugin on a fake node root answering from the fake NVML.

Everything runs inside one private mount + network namespace (a holder process made with
`unshare -m -n`; each daemon enters it with nsenter), on loopback only. Inside that namespace a
tmpfs covers /run (containerd's shim sockets, runc state), a temp dir covers /var/log (kubelet's
container log links), and temp files cover the kernel sysctls kubelet sets (vm.overcommit_memory,
kernel.panic, ...); kubelet's volume plugin dir (by default /usr/libexec/kubernetes/kubelet-plugins/
volume/exec, which it creates) is in the test's dir too, so no host path or sysctl outside the test's
dir is touched (test_k8s_host_paths.py checks the host's well-known paths before and after). kubelet and the
pods get their own cgroup parent (cgroupRoot), made in every cgroup v1 hierarchy and removed at the
end. Images are local only: a static pause and busybox, imported with `ctr images import`.

    with Node() as node:            # stop() on leaving, even on failure; logs kept on failure
        node.start()
        node.kubectl("get", "node", "-o", "json")

Facts used: docs/reference/real-peers.md (flags of the peers).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import hashlib
import io

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import peers  # noqa: E402

BUILD = os.environ.get("GPULET_BUILD") or os.path.join(SRC, "build")
GPULET = os.environ.get("GPULET") or os.path.join(BUILD, "gpulet")
FAKE_NVML_LIB = os.environ.get("FAKE_NVML_LIB") or os.path.join(BUILD, "fakenvml", "libnvidia-ml.so.1")
FIXTURES = os.path.join(SRC, "tests", "fixtures")
NODE_NAME = "gpulet-node"
NODE_IP = "10.254.0.1"  # on the namespace's lo: kubelet refuses a loopback node IP
KUBELET_ROOT = "/var/lib/kubelet"  # as the namespace sees it (bound to Node.kubelet_root)
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
BUSYBOX_IMAGE = "gpulet.test/busybox:1"
# kubelet sets these (pkg/kubelet/cm setupKernelTunables); inside the namespace they are our files
SYSCTLS = {"vm/overcommit_memory": "1", "vm/panic_on_oom": "0", "kernel/panic": "10", "kernel/panic_on_oops": "1",
           "kernel/keys/root_maxkeys": "1000000", "kernel/keys/root_maxbytes": "25000000"}


class NodeError(AssertionError):
    pass


def _run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if p.returncode != 0:
        raise NodeError("%s failed (exit %d):\n%s" % (" ".join(cmd), p.returncode, p.stdout[-3000:]))
    return p.stdout


# -- certificates ------------------------------------------------------------------------------
def _certs(d):
    os.makedirs(d)
    o = lambda *a: _run(["openssl", *a], cwd=d)  # noqa: E731
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    o("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=gpulet-test-ca")
    leaves = {"apiserver": ("/CN=kube-apiserver", "serverAuth",
                            "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default"),
              "admin": ("/O=system:masters/CN=admin", "clientAuth", None),
              "kubelet": ("/O=system:nodes/CN=system:node:" + NODE_NAME, "clientAuth", None)}
    for name, (subj, eku, san) in leaves.items():
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write("extendedKeyUsage=%s\nkeyUsage=digitalSignature,keyEncipherment\n" % eku)
            if san:
                f.write("subjectAltName=%s\n" % san)
        o("req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj", subj)
        o("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
          "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext")
    o("genrsa", "-out", "sa.key", "2048")
    o("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")


def _kubeconfig(path, certs, user):
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443",
                                                 "certificate-authority": os.path.join(certs, "ca.crt")}}],
           "users": [{"name": "u", "user": {"client-certificate": os.path.join(certs, user + ".crt"),
                                            "client-key": os.path.join(certs, user + ".key")}}],
           "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    with open(path, "w") as f:
        json.dump(cfg, f)


# -- images ------------------------------------------------------------------------------------
def _blob(blobs, data):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, digest), "wb") as f:
        f.write(data)
    return "sha256:" + digest


def _oci_tarball(out, name, files, entrypoint):
    """An OCI image layout tarball of one uncompressed layer; files: {path in image: (host file | None
    for a dir | 'link:TARGET')}. Named by the io.containerd.image.name annotation."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as t:
        for path, src in sorted(files.items()):
            if src is None:
                ti = tarfile.TarInfo(path)
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
                t.addfile(ti)
            elif src.startswith("link:"):
                ti = tarfile.TarInfo(path)
                ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, src[5:], 0o777
                t.addfile(ti)
            else:
                ti = t.gettarinfo(src, arcname=path)
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = ""
                with open(src, "rb") as f:
                    t.addfile(ti, f)
    with tempfile.TemporaryDirectory() as d:
        blobs = os.path.join(d, "blobs", "sha256")
        os.makedirs(blobs)
        ldata = layer.getvalue()
        ldig = _blob(blobs, ldata)
        config = json.dumps({"architecture": "amd64", "os": "linux",
                             "config": {"Entrypoint": entrypoint, "Env": ["PATH=/bin"]},
                             "rootfs": {"type": "layers", "diff_ids": [ldig]}}).encode()
        cdig = _blob(blobs, config)
        manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                               "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                          "digest": cdig, "size": len(config)},
                               "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                                           "digest": ldig, "size": len(ldata)}]}).encode()
        mdig = _blob(blobs, manifest)
        index = {"schemaVersion": 2, "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": mdig, "size": len(manifest),
             "platform": {"architecture": "amd64", "os": "linux"},
             "annotations": {"io.containerd.image.name": name,
                             "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}}]}
        with open(os.path.join(d, "index.json"), "w") as f:
            json.dump(index, f)
        with open(os.path.join(d, "oci-layout"), "w") as f:
            f.write('{"imageLayoutVersion": "1.0.0"}')
        with tarfile.open(out, "w") as t:
            for e in ("oci-layout", "index.json", "blobs"):
                t.add(os.path.join(d, e), arcname=e)


PAUSE_C = r"""
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
static void quit(int s) { (void)s; _exit(0); }
static void reap(int s) { (void)s; while (waitpid(-1, 0, WNOHANG) > 0) ; }
int main(void) { signal(SIGINT, quit); signal(SIGTERM, quit); signal(SIGCHLD, reap); for (;;) pause(); }
"""
BUSYBOX_TOOLS = ("sh", "ls", "cat", "env", "stat", "sleep", "grep", "readlink", "test", "echo", "find", "true")


def _images(d):
    os.makedirs(d)
    with open(os.path.join(d, "pause.c"), "w") as f:
        f.write(PAUSE_C)
    _run(["gcc", "-static", "-O2", "-o", os.path.join(d, "pause"), os.path.join(d, "pause.c")])
    pause = os.path.join(d, "pause.tar")
    _oci_tarball(pause, PAUSE_IMAGE, {"pause": os.path.join(d, "pause")}, ["/pause"])
    if not os.path.exists("/bin/busybox"):
        raise NodeError("/bin/busybox missing: install busybox-static (.ci/packages.txt)")
    files = {"bin": None, "etc": None, "tmp": None, "bin/busybox": "/bin/busybox"}
    files.update({"bin/" + t: "link:busybox" for t in BUSYBOX_TOOLS})
    busybox = os.path.join(d, "busybox.tar")
    _oci_tarball(busybox, BUSYBOX_IMAGE, files, ["/bin/sh"])
    return [pause, busybox]


# -- configs -----------------------------------------------------------------------------------
def _containerd_toml(t, cdi_dirs, enable_cdi=True):
    q = lambda s: '"%s"' % s  # noqa: E731
    return """version = 3
root = {root}
state = {state}
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.tracing",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs"]

[grpc]
  address = {sock}
[ttrpc]
  address = {sock_ttrpc}

[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = {enable_cdi}
  # raising a process's OOM protection needs CAP_SYS_RESOURCE, which CI containers may lack
  restrict_oom_score_adj = true
  cdi_spec_dirs = [{cdi}]
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = {runc}
        Root = {runc_root}
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [{cni_bin}]
    conf_dir = {cni_conf}

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "native"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "{pause}"

[plugins.'io.containerd.internal.v1.opt']
  path = {opt}

[plugins.'io.containerd.transfer.v1.local']
  [[plugins.'io.containerd.transfer.v1.local'.unpack_config]]
    platform = "linux/amd64"
    snapshotter = "native"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
""".format(enable_cdi="true" if enable_cdi else "false",
           root=q(t + "/containerd/root"), state=q(t + "/containerd/state"), sock=q(t + "/containerd.sock"),
           sock_ttrpc=q(t + "/containerd.sock.ttrpc"), cdi=", ".join(q(c) for c in cdi_dirs),
           runc=q(os.environ.get("GPULET_K8S_RUNC") or peers.runc()["runc"]), runc_root=q(t + "/runc"), cni_bin=q(t + "/cni/bin"),
           cni_conf=q(t + "/cni/net.d"), pause=PAUSE_IMAGE, opt=q(t + "/opt"))


def _kubelet_config(t, certs, cgroup_root):
    return {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "cgroupDriver": "cgroupfs", "cgroupRoot": cgroup_root, "failCgroupV1": False,
            "containerRuntimeEndpoint": "unix://" + t + "/containerd.sock",
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False},
                               "x509": {"clientCAFile": os.path.join(certs, "ca.crt")}},
            "authorization": {"mode": "AlwaysAllow"},
            "address": NODE_IP, "port": 10250, "readOnlyPort": 0, "healthzBindAddress": "127.0.0.1",
            "healthzPort": 10248, "failSwapOn": False, "protectKernelDefaults": False,
            "podLogsDir": t + "/pod-logs", "resolvConf": "",
            "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                             "nodefs.inodesFree": "1%"},
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "nodeStatusUpdateFrequency": "2s", "nodeStatusReportFrequency": "2s", "syncFrequency": "5s",
            "fileCheckFrequency": "5s", "serializeImagePulls": False, "rotateCertificates": False,
            "enforceNodeAllocatable": ["pods"], "cgroupsPerQOS": True}


def _cgroup_hierarchies():
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            if fstype in ("cgroup", "cgroup2") and mnt.startswith("/sys/fs/cgroup"):
                out.append(mnt)
    return out


class _Pid:
    """A process this one did not start (a detached node's), with the part of Popen that stop() uses."""

    def __init__(self, pid):
        self.pid = pid
        self.stdout = io.StringIO()
        try:  # the same process, not a pid used again since: its start time
            with open("/proc/%d/stat" % pid) as f:
                self.start = f.read().rsplit(")", 1)[1].split()[19]
        except OSError:
            self.start = None

    def poll(self):
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0
        return 0 if fields[0] == "Z" or fields[19] != self.start else None

    def send_signal(self, sig):
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout=None):
        deadline = time.time() + (timeout if timeout is not None else 3600)
        while self.poll() is None:
            if time.time() > deadline:
                raise subprocess.TimeoutExpired("pid %d" % self.pid, timeout)
            time.sleep(0.05)
        return 0


class Node:
    # kube-apiserver's authorizer and extra flags; the control-plane fixture (controlplane.py) sets RBAC
    authorization_mode = "AlwaysAllow"
    apiserver_flags = ()
    # Kubernetes feature gates of every component (apiserver, scheduler, controller-manager, kubelet)
    feature_gates = {}

    def _gates_flags(self):
        return ["--feature-gates=" + ",".join("%s=%s" % (k, str(v).lower()) for k, v in sorted(self.feature_gates.items()))] \
            if self.feature_gates else []

    def __init__(self, fixture="dgx-a100", keep_logs_on_failure=True, mkroot_args=(), tmp=None):
        """fixture: a name under tests/fixtures or a path without its .json; mkroot_args: more
        options of tests/lib/mkroot.sh (--all-caps: the caps nodes of MIG instances made later);
        tmp: the node's dir, made here (`make cluster-demo`), instead of a new temp dir."""
        self.fixture_name = fixture
        self.mkroot_args = list(mkroot_args)
        if tmp:
            os.makedirs(tmp)
        self.tmp = tmp or tempfile.mkdtemp(prefix="gpulet-k8s.")
        self.t = self.tmp
        self.logs = os.path.join(self.tmp, "logs")
        os.makedirs(self.logs)
        self.procs = {}
        self.holder = None
        self.cgroup_root = "/gpulet-k8s-%d-%s" % (os.getpid(), os.path.basename(self.tmp).split(".")[-1])
        self.cgroup_dirs = []
        self.keep_logs = keep_logs_on_failure
        self.failed = False
        self.timing = {}
        self.bins = {}
        self.kubelet_root = os.path.join(self.t, "kubelet")
        self.volume_plugin_dir = os.path.join(self.t, "volume-plugins")  # kubelet makes it
        self.root = os.path.join(self.t, "noderoot")  # the fake node root (driver + /dev)
        self.plugin_args = []

    # -- lifecycle -----------------------------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, typ, val, tb):
        self.failed = typ is not None
        self.stop()
        return False

    def start(self, plugin_args=("--device-list-strategy=cdi-cri",), gpus="8", control_plane=False, plugin=True,
              images=()):
        """control_plane: also kube-scheduler and kube-controller-manager (start_control_plane()); plugin:
        gpulet's plugin on this machine (False: the test runs one, e.g. in a pod, or the node's GPUs
        go through DRA); images: more OCI
        layout tarballs for containerd (named by their io.containerd.image.name annotation)."""
        t0 = time.time()
        self.bins = peers.all_peers()
        from helm_lib import fetch as fetch_k8stools
        self.bins["kubectl"] = fetch_k8stools()[1]
        self.timing["peers_s"] = time.time() - t0
        t1 = time.time()
        self.certs = os.path.join(self.t, "pki")
        _certs(self.certs)
        self.images = _images(os.path.join(self.t, "images")) + list(images)
        self._fake_root()
        self._namespace()
        self._cgroups()
        self._etcd()
        self._apiserver()
        if control_plane:
            self.start_control_plane()
        self._containerd()
        self._kubelet()
        if plugin:
            self.start_plugin(*plugin_args)
            self.wait_node_ready_for_gpus(count=gpus)
        self.timing["bringup_s"] = time.time() - t1
        return self

    def _fake_root(self):
        fixture = os.path.join(FIXTURES, self.fixture_name + ".json")
        _run(["sh", os.path.join(SRC, "tests/lib/mkroot.sh"), self.root, fixture, "--drm", *self.mkroot_args],
             env=dict(os.environ, GPULET_BUILD=BUILD))
        # --root R --driver-root R: the spec's host paths are R/... (real device nodes, real files).
        # R + T -> T makes every path of the node (R/..., the kubelet dir, containerd's config and
        # socket) readable under --root R as on a real host, for the plugin and the doctor.
        os.makedirs(os.path.dirname(self.root + self.t), exist_ok=True)
        os.symlink(self.t, self.root + self.t)
        # the spec's hooks run R/usr/local/bin/gpulet: a host path that exists under --root R too
        self.hook = os.path.join(self.root, "usr/local/bin/gpulet")
        for path, target in (("var/lib/kubelet", self.kubelet_root), ("etc/containerd/config.toml",
                                                                        os.path.join(self.t, "containerd.toml")),
                             ("usr/local/bin/gpulet", os.path.realpath(GPULET))):
            os.makedirs(os.path.dirname(os.path.join(self.root, path)), exist_ok=True)
            os.symlink(target, os.path.join(self.root, path))
        self.fixture = os.path.join(self.t, "fixture.json")
        shutil.copy(fixture, self.fixture)
        self.events_file = os.path.join(self.t, "nvml-events")
        open(self.events_file, "w").close()
        self.cdi_dir = os.path.join(self.root, "var/run/cdi")
        os.makedirs(self.cdi_dir, exist_ok=True)

    def _namespace(self):
        """The holder of the private mount + network namespaces every daemon enters."""
        t = self.t
        os.makedirs(self.kubelet_root, exist_ok=True)
        for d in ("varlog", "run", "sysctl", "pod-logs", "cni/bin", "cni/net.d", "runc", "etcd"):
            os.makedirs(os.path.join(t, d), exist_ok=True)
        # kubelet keeps its device-plugin dir at /var/lib/kubelet whatever --root-dir says, and
        # containerd its opt dir under /opt: private tmpfs over /var/lib and /opt, our dirs bound in
        script = ["set -e", "ip link set lo up", "ip addr add %s/32 dev lo" % NODE_IP,
                  "mount -t tmpfs -o mode=755 gpulet-k8s-run /run", "mount --bind %s/varlog /var/log" % t,
                  "mount -t tmpfs -o mode=755 gpulet-k8s-varlib /var/lib", "mkdir /var/lib/kubelet",
                  # shared, as a node's /var/lib/kubelet is: a mount made below the kubelet dir (the DRA
                  # driver's per-claim MPS /dev/shm) shows at both of its names
                  "mount --bind %s %s" % (self.kubelet_root, self.kubelet_root),
                  "mount --make-shared %s" % self.kubelet_root,
                  "mount --bind %s /var/lib/kubelet" % self.kubelet_root,
                  "mount -t tmpfs -o mode=755 gpulet-k8s-opt /opt",
                  # the plugin writes R/var/run/cdi; containerd reads /var/run/cdi, as on a node
                  "mkdir /run/cdi", "mount --bind %s /run/cdi" % self.cdi_dir]
        for name, val in SYSCTLS.items():
            f = os.path.join(t, "sysctl", name.replace("/", "."))
            with open(f, "w") as fh:
                fh.write(val + "\n")
            script.append("mount --bind %s /proc/sys/%s" % (f, name))
        script += ["echo ready", "exec sleep infinity"]
        self.holder = subprocess.Popen(["unshare", "-m", "-n", "--propagation", "private", "sh", "-c",
                                        "\n".join(script)], stdout=subprocess.PIPE,
                                       stderr=open(os.path.join(self.logs, "netns.log"), "w"), text=True,
                                       start_new_session=True)
        line = self.holder.stdout.readline()
        if line.strip() != "ready":
            raise NodeError("namespace setup failed: %s" % open(os.path.join(self.logs, "netns.log")).read())

    def ns(self, argv):
        return ["nsenter", "-t", str(self.holder.pid), "-m", "-n", "--"] + list(argv)

    def _cgroups(self):
        # every hierarchy, the hybrid cgroup2 one too (libcontainer makes the pods' dirs there as well)
        for h in _cgroup_hierarchies():
            d = h + self.cgroup_root
            os.makedirs(d, exist_ok=True)
            self.cgroup_dirs.append(d)
            if os.path.basename(h).startswith("cpuset"):
                for k in ("cpuset.cpus", "cpuset.mems"):
                    with open(os.path.join(h, k)) as f, open(os.path.join(d, k), "w") as g:
                        g.write(f.read())

    def spawn(self, name, argv, env=None):
        log = open(os.path.join(self.logs, name + ".log"), "ab")
        p = subprocess.Popen(self.ns(argv), stdout=log, stderr=subprocess.STDOUT, env=env or os.environ,
                             start_new_session=True)
        self.procs[name] = p
        return p

    def wait(self, what, pred, timeout=60, proc=None):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc and self.procs.get(proc) and self.procs[proc].poll() is not None:
                raise NodeError("%s exited (rc %s) while waiting for %s; log %s/%s.log:\n%s"
                                % (proc, self.procs[proc].poll(), what, self.logs, proc, self.log_tail(proc)))
            try:
                r = pred()
                if r:
                    return r
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.2)
        raise NodeError("timed out after %ss waiting for %s (logs in %s)%s"
                        % (timeout, what, self.logs, ("\n" + self.log_tail(proc)) if proc else ""))

    def log_tail(self, name, n=3000):
        try:
            with open(os.path.join(self.logs, name + ".log"), errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def _etcd(self):
        self.spawn("etcd", [self.bins["server"], "--data-dir", self.t + "/etcd/data", "--name", "gpulet-test",
                            "--listen-client-urls", "http://127.0.0.1:2379",
                            "--advertise-client-urls", "http://127.0.0.1:2379",
                            "--listen-peer-urls", "http://127.0.0.1:2380",
                            "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
                            "--initial-cluster", "gpulet-test=http://127.0.0.1:2380",
                            "--unsafe-no-fsync", "--log-level", "warn"])

    def _apiserver(self):
        c = self.certs
        self.admin_kubeconfig = os.path.join(self.t, "admin.kubeconfig")
        _kubeconfig(self.admin_kubeconfig, c, "admin")
        self.spawn("kube-apiserver", [
            self.bins["kube-apiserver"], "--etcd-servers", "http://127.0.0.1:2379", "--bind-address", "127.0.0.1",
            "--advertise-address", "127.0.0.1", "--secure-port", "6443", "--cert-dir", self.t + "/apiserver-certs",
            "--tls-cert-file", c + "/apiserver.crt", "--tls-private-key-file", c + "/apiserver.key",
            "--client-ca-file", c + "/ca.crt", "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", c + "/sa.pub", "--service-account-signing-key-file", c + "/sa.key",
            "--service-cluster-ip-range", "10.96.0.0/24", "--authorization-mode", self.authorization_mode,
            "--disable-admission-plugins", "ServiceAccount", "--endpoint-reconciler-type", "none",
            "--kubelet-client-certificate", c + "/admin.crt", "--kubelet-client-key", c + "/admin.key",
            "--kubelet-preferred-address-types", "InternalIP", "--enable-priority-and-fairness=false", "--v", "1",
            *self.apiserver_flags, *self._gates_flags()])
        self.wait("kube-apiserver /readyz", lambda: self.kubectl("get", "--raw", "/readyz", check=False)[0] == 0,
                  timeout=90, proc="kube-apiserver")

    # -- the rest of the control plane (DRA: the scheduler allocates, the resourceclaim controller
    # makes claims from templates; docs/reference/dra.md §10) ---------------------------------------
    def start_control_plane(self):
        """kube-scheduler and kube-controller-manager of the same release, on the API server as admin,
        serving only on the namespace's loopback. DRA is on by default in 1.34 (GA); the controller
        manager runs the resourceclaim, garbage-collector and daemonset controllers (no node lifecycle
        controller: it would taint this CNI-less node not-ready)."""
        c = self.certs
        common = ["--kubeconfig", self.admin_kubeconfig, "--authentication-kubeconfig", self.admin_kubeconfig,
                  "--authorization-kubeconfig", self.admin_kubeconfig, "--bind-address", "127.0.0.1",
                  "--leader-elect=false", "--v", "1", *self._gates_flags()]
        self.spawn("kube-scheduler", [self.bins["kube-scheduler"], *common, "--secure-port", "10259",
                                      "--cert-dir", self.t + "/scheduler-certs"])
        self.spawn("kube-controller-manager", [
            self.bins["kube-controller-manager"], *common, "--secure-port", "10257",
            "--cert-dir", self.t + "/controller-manager-certs",
            "--controllers", "resourceclaim-controller,garbage-collector-controller,daemonset-controller",
            "--service-account-private-key-file", c + "/sa.key", "--root-ca-file", c + "/ca.crt",
            "--use-service-account-credentials=false",
            # its flexvolume prober makes this dir (default /usr/libexec/kubernetes/...): the node's own
            "--flex-volume-plugin-dir", self.t + "/flexvolume"])
        for name, port in (("kube-scheduler", 10259), ("kube-controller-manager", 10257)):
            # /healthz is open to anyone (--authorization-always-allow-paths); their serving certs are self-signed
            url = "https://127.0.0.1:%d/healthz" % port
            self.wait("%s %s" % (name, url), lambda url=url: subprocess.run(
                self.ns(["curl", "-sk", "--max-time", "2", url]), capture_output=True, text=True).stdout.strip() == "ok",
                timeout=60, proc=name)

    def get(self, *what):
        """kubectl get WHAT -o json, parsed."""
        return json.loads(self.kubectl("get", *what, "-o", "json")[1])

    def events_of(self, name):
        """(reason, component, message) of the events about object name."""
        return [(e.get("reason"), e.get("source", {}).get("component") or e.get("reportingComponent"),
                 e.get("message", "")) for e in self.get("events", "--field-selector", "involvedObject.name=" + name)["items"]]

    def _containerd(self, enable_cdi=True, images=True):
        conf = os.path.join(self.t, "containerd.toml")
        with open(conf, "w") as f:
            f.write(_containerd_toml(self.t, ["/var/run/cdi"], enable_cdi))
        bindir = os.path.dirname(self.bins["containerd"])
        env = dict(os.environ, PATH=bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        self.containerd_sock = self.t + "/containerd.sock"
        self.spawn("containerd", [self.bins["containerd"], "--config", conf, "--log-level", "info"], env=env)
        self.wait("containerd socket", lambda: self.ctr("version", check=False)[0] == 0, timeout=30,
                  proc="containerd")
        for img in self.images if images else ():
            self.ctr("images", "import", "--snapshotter", "native", "--platform", "linux/amd64", img)

    def restart_containerd(self, enable_cdi=True):
        """containerd stopped and started again on a rewritten config (its images stay in its root;
        running pods' shims go on)."""
        self.stop_proc("containerd")
        self._containerd(enable_cdi, images=False)

    def ctr(self, *args, check=True):
        p = subprocess.run(self.ns([self.bins["ctr"], "-a", self.containerd_sock, "-n", "k8s.io", *args]),
                           capture_output=True, text=True, timeout=120)
        if check and p.returncode != 0:
            raise NodeError("ctr %s: %s" % (" ".join(args), p.stderr.strip()))
        return p.returncode, p.stdout

    def crictl(self, *args, check=True):
        p = subprocess.run(self.ns([self.bins["crictl"], "--runtime-endpoint", "unix://" + self.containerd_sock,
                                    "--image-endpoint", "unix://" + self.containerd_sock, *args]),
                           capture_output=True, text=True, timeout=120)
        if check and p.returncode != 0:
            raise NodeError("crictl %s: %s" % (" ".join(args), p.stderr.strip()))
        return p.returncode, p.stdout

    def _kubelet(self):
        os.makedirs(self.kubelet_root, exist_ok=True)
        conf = os.path.join(self.t, "kubelet.yaml")
        cfg = _kubelet_config(self.t, self.certs, self.cgroup_root)
        if self.feature_gates:
            cfg["featureGates"] = dict(self.feature_gates)
        with open(conf, "w") as f:
            json.dump(cfg, f)
        self.kubelet_kubeconfig = os.path.join(self.t, "kubelet.kubeconfig")
        _kubeconfig(self.kubelet_kubeconfig, self.certs, "kubelet")
        self.start_kubelet()

    def start_kubelet(self):
        conf = os.path.join(self.t, "kubelet.yaml")
        self.spawn("kubelet", [self.bins["kubelet"], "--config", conf, "--kubeconfig", self.kubelet_kubeconfig,
                               "--root-dir", KUBELET_ROOT, "--hostname-override", NODE_NAME,
                               "--node-ip", NODE_IP, "--cert-dir", self.t + "/kubelet-pki",
                               "--volume-plugin-dir", self.volume_plugin_dir, "--v", "2"])
        self.wait("node %s registered" % NODE_NAME,
                  lambda: self.kubectl("get", "node", NODE_NAME, check=False)[0] == 0, timeout=60, proc="kubelet")
        self.wait("kubelet's device-plugin socket",
                  lambda: os.path.exists(os.path.join(self.kubelet_root, "device-plugins", "kubelet.sock")),
                  timeout=30, proc="kubelet")

    def stop_proc(self, name, timeout=15):
        p = self.procs.pop(name, None)
        if not p or p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    # -- gpulet's plugin -----------------------------------------------------------------------
    def plugin_env(self):
        return dict(os.environ, FAKE_NVML_FIXTURE=self.fixture, FAKE_NVML_EVENTS=self.events_file)

    def start_plugin(self, *args):
        self.plugin_args = list(args)
        dp = KUBELET_ROOT + "/device-plugins"
        self.spawn("plugin", [GPULET, "plugin", "--nvml-library", FAKE_NVML_LIB, "--root", self.root,
                              "--driver-root", self.root, "--nvidia-cdi-hook-path", self.hook,
                              "--device-plugin-path", dp, "--kubelet-socket", os.path.join(dp, "kubelet.sock"),
                              *args], env=self.plugin_env())

    def stop_plugin(self):
        self.stop_proc("plugin")

    def fixture_data(self):
        with open(self.fixture) as f:
            return json.load(f)

    def write_fixture(self, data):
        """The fake NVML rereads its fixture when the file changes (tests/fakenvml/README.md)."""
        with open(self.fixture + ".new", "w") as f:
            json.dump(data, f)
        os.rename(self.fixture + ".new", self.fixture)

    def node_json(self):
        return json.loads(self.kubectl("get", "node", NODE_NAME, "-o", "json")[1])

    def gpu_capacity(self, resource="nvidia.com/gpu"):
        st = self.node_json()["status"]
        return st.get("capacity", {}).get(resource), st.get("allocatable", {}).get(resource)

    def wait_node_ready_for_gpus(self, count="8", resource="nvidia.com/gpu", timeout=60):
        return self.wait("%s capacity %s" % (resource, count),
                         lambda: self.gpu_capacity(resource) == (count, count), timeout=timeout, proc="plugin")

    # -- API -----------------------------------------------------------------------------------
    def kubectl(self, *args, check=True, stdin=None, timeout=60):
        p = subprocess.run(self.ns([self.bins["kubectl"], "--kubeconfig", self.admin_kubeconfig, *args]),
                           capture_output=True, text=True, input=stdin, timeout=timeout)
        self.kubectl_stderr = p.stderr
        if check and p.returncode != 0:
            raise NodeError("kubectl %s: %s" % (" ".join(args), p.stderr.strip()))
        return p.returncode, p.stdout

    def run_pod(self, name, script, limits, annotations=None, timeout=int(os.environ.get("GPULET_K8S_POD_TIMEOUT", "90")),
                volumes=(), mounts=()):
        """A busybox pod on this node (nodeName, host network: no CNI) running script, with the given
        volumes and their mounts; returns (phase, log). The script's output is the test's evidence of
        what the container sees."""
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
               "spec": {"nodeName": NODE_NAME, "hostNetwork": True, "automountServiceAccountToken": False,
                        "enableServiceLinks": False, "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                        "volumes": list(volumes),
                        "containers": [{"name": "c", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                                        "command": ["/bin/sh", "-c", script], "volumeMounts": list(mounts),
                                        "resources": {"limits": dict(limits)}}]}}
        self.kubectl("apply", "-f", "-", stdin=json.dumps(pod))

        def done():
            st = json.loads(self.kubectl("get", "pod", name, "-o", "json")[1])["status"]
            if st.get("phase") in ("Succeeded", "Failed"):
                return st
            for cs in st.get("containerStatuses", []):
                w = cs.get("state", {}).get("waiting", {})
                if w.get("reason") in ("CreateContainerError", "RunContainerError", "ErrImageNeverPull"):
                    return st
            return None

        st = self.wait("pod %s to finish" % name, done, timeout=timeout)
        if st.get("phase") not in ("Succeeded", "Failed") or st.get("reason"):
            return st, ""  # never started (runtime error, admission refused): its status says why
        rc, log = self.kubectl("logs", name, check=False)
        if rc != 0 or not log:
            raise NodeError("kubectl logs %s (through the API server and kubelet) gave nothing, rc %d: %s"
                            % (name, rc, self.kubectl_stderr.strip()))
        return st, log

    def start_pod(self, name, script, limits, timeout=60):
        """A pod that keeps running (script, then sleep); returns once it runs and has printed."""
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
               "spec": {"nodeName": NODE_NAME, "hostNetwork": True, "automountServiceAccountToken": False,
                        "enableServiceLinks": False, "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                        "containers": [{"name": "c", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                                        "command": ["/bin/sh", "-c", script + "\necho PROBE-DONE\nexec sleep 3600"],
                                        "resources": {"limits": dict(limits)}}]}}
        self.kubectl("apply", "-f", "-", stdin=json.dumps(pod))
        return self.wait("pod %s running with its output" % name,
                         lambda: "PROBE-DONE" in self.kubectl("logs", name, check=False)[1] and
                         self.kubectl("logs", name)[1], timeout=timeout, proc="kubelet")

    def delete_pod(self, name):
        self.kubectl("delete", "pod", name, "--grace-period=0", "--force", "--wait=false", check=False)

    # -- a node that outlives its process (`make cluster-demo`) -----------------------------------
    STATE = "node.json"

    def detach(self):
        """Keep the node running after this process exits: its daemons are in their own sessions; the
        pids and what stop() needs go to DIR/node.json, the holder's pid to DIR/holder.pid."""
        state = {"tmp": self.tmp, "cgroup_root": self.cgroup_root, "cgroup_dirs": self.cgroup_dirs,
                 "holder": self.holder.pid, "procs": {n: p.pid for n, p in self.procs.items() if p.poll() is None},
                 "bins": self.bins, "containerd_sock": self.containerd_sock,
                 "admin_kubeconfig": self.admin_kubeconfig}
        with open(os.path.join(self.tmp, self.STATE), "w") as f:
            json.dump(state, f, indent=1)
        with open(os.path.join(self.tmp, "holder.pid"), "w") as f:
            f.write("%d\n" % self.holder.pid)
        self.holder.stdout.close()
        self.holder = self.procs = None  # stop() from here on is attach(DIR).stop()

    @classmethod
    def attach(cls, tmp):
        """The node detach() left in tmp, for stop() (or kubectl, ctr) from another process."""
        with open(os.path.join(tmp, cls.STATE)) as f:
            st = json.load(f)
        node = cls.__new__(cls)
        node.tmp = node.t = st["tmp"]
        node.logs = os.path.join(node.tmp, "logs")
        node.cgroup_root, node.cgroup_dirs = st["cgroup_root"], st["cgroup_dirs"]
        node.bins, node.containerd_sock = st["bins"], st["containerd_sock"]
        node.admin_kubeconfig = st["admin_kubeconfig"]
        node.holder = _Pid(st["holder"])
        node.procs = {n: _Pid(pid) for n, pid in st["procs"].items()}
        node.failed, node.keep_logs = False, False
        return node

    # -- teardown ------------------------------------------------------------------------------
    def _kill_leftovers(self):
        """Shims and container processes of this node: by their cgroup (pods) or by argv naming our
        dir (containerd's shims); each by pid."""
        pids = set()
        for d in self.cgroup_dirs:
            for dirpath, _, files in os.walk(d):
                if "cgroup.procs" in files:
                    try:
                        with open(os.path.join(dirpath, "cgroup.procs")) as f:
                            pids.update(int(x) for x in f.read().split())
                    except OSError:
                        pass
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if self.t.encode() in f.read():
                        pids.add(int(pid))
            except OSError:
                pass
        pid = os.getpid()  # this process and those that started it (a make or a shell naming the dir)
        while pid > 1:
            pids.discard(pid)
            try:
                with open("/proc/%d/stat" % pid) as f:
                    pid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def _remove_cgroups(self):
        for d in self.cgroup_dirs:
            for _ in range(50):
                for dirpath, dirs, _ in sorted(os.walk(d, topdown=False), key=lambda x: -len(x[0])):
                    try:
                        os.rmdir(dirpath)
                    except OSError:
                        pass
                if not os.path.exists(d):
                    break
                time.sleep(0.1)

    def stop(self):
        if self.holder and "containerd" in self.procs and self.procs["containerd"].poll() is None:
            self.crictl("rmp", "-fa", check=False)
        for name in ("plugin", "kubelet", "containerd", "kube-controller-manager", "kube-scheduler",
                     "kube-apiserver", "etcd"):
            self.stop_proc(name)
        for name in list(self.procs):
            self.stop_proc(name)
        self._kill_leftovers()
        if self.holder:
            self.holder.kill()
            self.holder.wait()
            self.holder.stdout.close()
            self.holder = None
        self._remove_cgroups()
        left = [d for d in self.cgroup_dirs if os.path.exists(d)]
        if self.failed and self.keep_logs:
            sys.stderr.write("k8s node logs kept in %s (kubelet.log, containerd.log, plugin.log, ...)\n" % self.logs)
            self._remove_tree_but_logs()
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
        if left:
            raise NodeError("cgroups left behind: %s" % left)

    def _remove_tree_but_logs(self):
        for e in os.listdir(self.tmp):
            if e != "logs":
                p = os.path.join(self.tmp, e)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    try:
                        os.unlink(p)
                    except OSError:
                        pass
