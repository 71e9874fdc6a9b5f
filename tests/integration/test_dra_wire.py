#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet dra` on the wire, judged by kubelet's side written with python3-grpcio and python3-protobuf
(dra_standin.py; docs/reference/dra.md §2, §3):

  * registration: <registry>/gpu.nvidia.com-reg.sock answers GetInfo as kubelet's plugin watcher
    expects (type DRAPlugin, the driver name, the dra.sock endpoint, v1.DRAPlugin then v1beta1.DRAPlugin)
    and takes NotifyRegistrationStatus; both sockets are 0600;
  * NodePrepareResources, v1 and v1beta1: every claim of a request gets its own entry; with the API
    server unreachable each says the claim cannot be read (never an RPC error, never a silent
    success); NodeUnprepareResources of a claim it never prepared succeeds; a uid that is no uid is refused;
  * kubelet's device health stream (NodeWatchResources, v1alpha1.DRAResourceHealth, listed in GetInfo):
    every published device HEALTHY, then an XID 79 on GPU 0 sends the list again with it UNHEALTHY;
  * a request that does not decode is INVALID_ARGUMENT, an unknown method UNIMPLEMENTED;
  * the two stand-in modules carry the same fields under the two packages (the v1beta1 one is made
    from proto/dra.proto by the build, as upstream's v1beta1 file is v1's under another package);
  * a second instance on the same dirs exits 1 and leaves the first serving; SIGTERM removes the
    sockets; a half-prepared claim of the checkpoint (its CDI spec) is undone at start;
  * NVIDIA's program name gpu-kubelet-plugin (a link to gpulet) runs gpulet dra;
  * NVIDIA's options: --node-name required, only the values of health port, metrics endpoint,
    consumable shares and feature gates it can honour are accepted (exit 2 otherwise); without an API
    server to talk to (no kubeconfig, not in a pod) it does not start (exit 1).
"""
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from plugin_lib import FAKE_NVML_LIB, FIXTURES, GPULET, MKROOT, SANITIZED, check, fail  # noqa: E402
import dra_standin as kubelet  # noqa: E402
import dra_pb2  # noqa: E402
import dra_v1beta1_pb2  # noqa: E402
import grpc  # noqa: E402

REG = "/var/lib/kubelet/plugins_registry"
PLUGINS = "/var/lib/kubelet/plugins"
UID = "4a1b2c3d-0000-4000-8000-000000000001"


class Node:
    def __init__(self, fixture="dgx-a100"):
        self.tmp = tempfile.mkdtemp(prefix="gpulet-dra.")
        self.root = os.path.join(self.tmp, "root")
        subprocess.run(["sh", MKROOT, self.root, fixture], check=True, stdout=subprocess.DEVNULL)
        os.makedirs(self.root + REG)
        os.makedirs(self.root + "/proc/sys/kernel/random", exist_ok=True)
        self.set_boot("boot-a")
        self.fixture = os.path.join(self.tmp, fixture + ".json")
        shutil.copy(os.path.join(FIXTURES, fixture + ".json"), self.fixture)
        self.events = os.path.join(self.tmp, "nvml-events")
        open(self.events, "w").close()
        # an API server nobody listens on: every claim's GET fails, the pool is never published
        self.kubeconfig = os.path.join(self.tmp, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                       "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                       "users": [{"name": "u", "user": {"token": "t"}}],
                       "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}, f)
        self.reg = self.root + REG + "/gpu.nvidia.com-reg.sock"
        self.sock = self.root + PLUGINS + "/gpu.nvidia.com/dra.sock"
        self.procs = []

    def set_boot(self, bid):
        with open(self.root + "/proc/sys/kernel/random/boot_id", "w") as f:
            f.write(bid + "\n")

    def env(self, extra=None):
        env = dict(os.environ, FAKE_NVML_FIXTURE=self.fixture, FAKE_NVML_EVENTS=self.events, GRPC_VERBOSITY="error",
                   KUBECONFIG=self.kubeconfig, GPULET_KERNEL_LOG="")
        for k in ("NODE_NAME", "CDI_ROOT", "FEATURE_GATES", "NVIDIA_DRIVER_ROOT", "HEALTHCHECK_PORT", "HTTP_ENDPOINT",
                  "KUBELET_REGISTRAR_DIRECTORY_PATH", "KUBELET_PLUGINS_DIRECTORY_PATH", "CONSUMABLE_SHARES",
                  "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "ADDITIONAL_XIDS_TO_IGNORE"):
            env.pop(k, None)
        if SANITIZED:  # as plugin_lib: the fake NVML's fixture is static storage past dlclose
            env["LD_PRELOAD"] = FAKE_NVML_LIB
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
        env.update(extra or {})
        return env

    def args(self, *more):
        return [GPULET, "dra", "--nvml-library", FAKE_NVML_LIB, "--root", self.root, *more]

    def start(self, *more, env=None, wait=True):
        log = open(os.path.join(self.tmp, "dra-%d.log" % len(self.procs)), "w+")
        p = subprocess.Popen(self.args("--node-name", "node-a", *more), env=self.env(env), stdout=log,
                             stderr=subprocess.STDOUT)
        p.log = log
        self.procs.append(p)
        if wait:  # its last start line: everything before it (the checkpoint's cleanup too) is logged
            deadline = time.time() + 30
            while "Serving DRA plugin" not in self.log(p):
                if p.poll() is not None or time.time() > deadline:
                    fail("gpulet dra did not come up (rc %s): %s" % (p.poll(), self.log(p)))
                time.sleep(0.05)
        return p

    def log(self, p):
        p.log.flush()
        with open(p.log.name) as f:
            return f.read()

    def stop(self, p, sig=signal.SIGTERM):
        if p.poll() is None:
            p.send_signal(sig)
        rc = p.wait(15)
        check("ERROR: AddressSanitizer" not in self.log(p) and "LeakSanitizer" not in self.log(p),
              "sanitizer report:\n" + self.log(p)[-3000:])
        return rc

    def run(self, *more, env=None):
        return subprocess.run(self.args(*more), env=self.env(env), capture_output=True, text=True, timeout=30)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def test_registration(n):
    p = n.start()
    info = kubelet.info(n.reg)
    # kubelet's plugin watcher: type, name, endpoint (a host path), versions most recent first
    check(info == {"type": "DRAPlugin", "name": "gpu.nvidia.com", "endpoint": PLUGINS + "/gpu.nvidia.com/dra.sock",
                   "supported_versions": ["v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"]},
          "GetInfo: %s" % info)
    for path in (n.reg, n.sock):
        mode = os.stat(path).st_mode
        check(stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600, "%s mode %o" % (path, stat.S_IMODE(mode)))
    kubelet.notify(n.reg, True)
    kubelet.notify(n.reg, False, "none of the services are supported")
    log = n.log(p)  # logged by the handler before it answered
    check("Registered DRA plugin with kubelet" in log, log)
    check('kubelet refused the DRA plugin\'s registration' in log and "none of the services are supported" in log, log)
    check(n.stop(p) == 0, "exit status")


def test_claims_api_unreachable(n):
    p = n.start()
    claims = [{"namespace": "ns", "name": "a", "uid": UID}, {"namespace": "ns", "name": "b", "uid": UID[:-1] + "2"}]
    for version in ("v1", "v1beta1"):
        r = kubelet.prepare(n.sock, version, claims)
        check(sorted(r) == sorted(c["uid"] for c in claims), "%s: one entry per claim: %s" % (version, r))
        for c in claims:
            one = r[c["uid"]]
            check(one["devices"] == [] and one["error"].startswith("ResourceClaim ns/%s: " % c["name"])
                  and "127.0.0.1:1" in one["error"], "%s: %s" % (version, one))
        r = kubelet.unprepare(n.sock, version, claims + [{"namespace": "ns", "name": "x", "uid": "../../etc"}])
        check(r[UID]["error"] == "" and r[UID[:-1] + "2"]["error"] == "", "unprepare of unknown claims: %s" % r)
        check("is not a Kubernetes uid" in r["../../etc"]["error"], "bad uid: %s" % r)
    check(kubelet.prepare(n.sock, "v1", []) == {}, "an empty request")
    check(n.stop(p) == 0, "exit status")


def test_health_stream(n):
    """kubelet's NodeWatchResources: the full list at once, again when a GPU turns unhealthy."""
    p = n.start()
    with open(n.fixture) as f:
        minor0 = json.load(f)["gpus"][0].get("minor", 0)
    # the fake NVML's event sets see only what is appended after they exist (tests/fakenvml/README.md)
    deadline = time.time() + 20
    while "Watching the GPUs' health" not in n.log(p):
        check(time.time() < deadline, "no health watcher: " + n.log(p))
        time.sleep(0.05)

    def inject(i):
        if i == 0:
            with open(n.events, "a") as f:
                f.write("xid 0 79\n")
    first, second = kubelet.health(n.sock, 2, timeout=20, each=inject)
    check(all(k.startswith("node-a/") for k in first) and "node-a/gpu-%d" % minor0 in first and len(first) == 13 and
          set(first.values()) == {"HEALTHY"}, "first list: %s" % first)
    check(second["node-a/gpu-%d" % minor0] == "UNHEALTHY" and sum(v == "UNHEALTHY" for v in second.values()) == 1,
          "after XID 79 on GPU 0: %s" % second)
    log = n.log(p)
    check("unhealthy device" in log and "device=gpu-%d" % minor0 in log, log)
    check(n.stop(p) == 0, "exit status")


def test_bad_requests(n):
    p = n.start()
    with grpc.insecure_channel("unix:" + n.sock) as ch:
        raw = lambda m: ch.unary_unary(m, request_serializer=lambda b: b, response_deserializer=lambda b: b)  # noqa
        for method in ("/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
                       "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources"):
            try:
                raw(method)(b"\x0a\xff\xff\xff\xff\x0f", timeout=5)
                fail("%s took garbage" % method)
            except grpc.RpcError as e:
                check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "%s: %s %s" % (method, e.code(), e.details()))
        try:
            raw("/k8s.io.kubelet.pkg.apis.dra.v1alpha4.Node/NodePrepareResources")(b"", timeout=5)
            fail("an unknown method answered")
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.UNIMPLEMENTED, "unknown method: %s" % e.code())
    # still serving
    check(kubelet.unprepare(n.sock, "v1", [{"namespace": "a", "name": "b", "uid": UID}])[UID]["error"] == "", "alive")
    check(n.stop(p) == 0, "exit status")


def test_same_messages(_n):
    """The stand-in's v1beta1 messages are v1's, under their own package (so the v1beta1 calls above
    really go to /k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/...)."""
    def fields(mod):
        out = {}
        for name, d in mod.DESCRIPTOR.message_types_by_name.items():
            out[name] = sorted((f.name, f.number, f.type, f.label, f.message_type.name if f.message_type else "")
                               for f in d.fields)
            for nested in d.nested_types:
                out[name + "." + nested.name] = sorted((f.name, f.number, f.type, f.label) for f in nested.fields)
        return out
    a, b = fields(dra_pb2), fields(dra_v1beta1_pb2)
    check(a == b and len(a) >= 8, "v1 %s\nv1beta1 %s" % (a, b))
    check(dra_pb2.DESCRIPTOR.package == "k8s.io.kubelet.pkg.apis.dra.v1" and
          dra_v1beta1_pb2.DESCRIPTOR.package == "k8s.io.kubelet.pkg.apis.dra.v1beta1", "packages")


def test_second_instance_and_stop(n):
    p = n.start()
    q = n.start(wait=False)
    rc = q.wait(15)
    log = n.log(q)
    check(rc == 1 and "Cannot start the DRA plugin" in log, "second instance: rc %s %s" % (rc, log))
    check(kubelet.info(n.reg)["name"] == "gpu.nvidia.com", "the first one still answers")
    check(n.stop(p) == 0, "exit status")
    check(not os.path.exists(n.sock) and not os.path.exists(n.reg), "sockets left after SIGTERM")
    check(os.path.exists(n.root + PLUGINS + "/gpu.nvidia.com/gpulet-checkpoint.json"), "checkpoint kept")


def test_half_prepared_at_start(n):
    """A claim a crash left PrepareStarted, with its spec written: undone before serving."""
    cp_dir = n.root + PLUGINS + "/gpu.nvidia.com"
    cdi = n.root + "/var/run/cdi"
    os.makedirs(cp_dir)
    os.makedirs(cdi)
    spec = "k8s.gpu.nvidia.com-claim_%s.yaml" % UID
    # the spec as gpulet wrote it (its owner marker), and a record that never completed
    with open(os.path.join(cdi, spec), "w") as f:
        f.write('cdiVersion: 0.3.0\nkind: k8s.gpu.nvidia.com/claim\ncontainerEdits:\n  env:\n  - '
                'GPULET_CDI_SPEC=k8s.gpu.nvidia.com/claim\ndevices:\n- name: x\n  containerEdits:\n    env: [A=1]\n')
    with open(os.path.join(cp_dir, "gpulet-checkpoint.json"), "w") as f:
        json.dump({"kind": "gpulet-dra-checkpoint", "version": 1, "nodeBootID": "boot-a",
                   "claims": {UID: {"state": "PrepareStarted", "namespace": "ns", "name": "c", "devices": [],
                                    "groups": []}}}, f)
    p = n.start()
    log = n.log(p)
    check("Undid a half-prepared claim" in log and UID in log, log)
    check(not os.path.exists(os.path.join(cdi, spec)), "the half-prepared claim's spec is still there")
    with open(os.path.join(cp_dir, "gpulet-checkpoint.json")) as f:
        check(json.load(f)["claims"] == {}, "the record is still there")
    check(n.stop(p) == 0, "exit status")
    # a reboot since: every claim is undone, said once
    with open(os.path.join(cp_dir, "gpulet-checkpoint.json"), "w") as f:
        json.dump({"kind": "gpulet-dra-checkpoint", "version": 1, "nodeBootID": "boot-a",
                   "claims": {UID: {"state": "PrepareCompleted", "namespace": "ns", "name": "c", "devices": [],
                                    "groups": []}}}, f)
    n.set_boot("boot-b")
    p = n.start()
    log = n.log(p)
    check('found="another boot\'s"' in log and "The node rebooted since the checkpoint" in log, log)
    check(n.stop(p) == 0, "exit status")


def test_options(n):
    cases = [
        ((), {}, 2, "--node-name (or env NODE_NAME) is required"),
        (("--node-name", "x", "--healthcheck-port", "8080"), {}, 2, "gRPC health service is not implemented"),
        (("--node-name", "x"), {"HEALTHCHECK_PORT": "51515"}, 2, "gRPC health service is not implemented"),
        (("--node-name", "x", "--http-endpoint", ":8080"), {}, 2, "metrics are not served by gpulet dra"),
        (("--node-name", "x", "--consumable-shares", "memory"), {}, 2, "only disabled is accepted"),
        (("--node-name", "x", "--feature-gates", "DynamicMIG=true"), {}, 2, "DynamicMIG=true is not implemented"),
        (("--node-name", "x"), {"FEATURE_GATES": "Bogus=true"}, 2, "unknown feature gate Bogus"),
        (("--node-name", "x", "--feature-gates", "MPSSupport=maybe"), {}, 2, "want NAME=true or NAME=false"),
        (("--node-name", "x", "--kubelet-registrar-directory-path", "/nowhere"), {}, 1,
         "kubelet's plugin registration dir"),
        (("--node-name", "x", "--additional-xids-to-ignore", "48,all"), {}, 2, "want XID numbers"),
        (("--node-name", "x", "--kube-api-qps", "fast"), {}, 2, "--kube-api-qps 'fast' is not a number"),
        (("--node-name", "x"), {"KUBECONFIG": ""}, 1, "Cannot start the DRA plugin without the Kubernetes API"),
    ]
    for args, env, rc, text in cases:
        r = n.run(*args, env=env)
        check(r.returncode == rc and text in r.stderr, "%s %s: rc %d, stderr %s" % (args, env, r.returncode, r.stderr))
    # NVIDIA's program name: a link named gpu-kubelet-plugin runs gpulet dra (src/main.c programs[])
    link = os.path.join(n.tmp, "gpu-kubelet-plugin")
    os.symlink(os.path.realpath(GPULET), link)
    r = subprocess.run([link, "--help"], env=n.env(), capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and "gpulet dra" in r.stdout and "--kubelet-plugins-directory-path" in r.stdout,
          "gpu-kubelet-plugin --help: rc %d %s" % (r.returncode, r.stdout[:300]))
    # NVIDIA's env vars: NODE_NAME, feature gates it can honour (the ComputeDomain ones concern its other plugin)
    p = n.start(env={"NODE_NAME": "node-b", "FEATURE_GATES": "TimeSlicingSettings=true,MPSSupport=false,"
                     "ComputeDomainCliques=true,DynamicMIG=false", "IMAGE_NAME": "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.12.0"})
    check("node=node-a" in n.log(p), "the flag wins over NODE_NAME")
    check("NVIDIA's MPS Deployment option has no effect" in n.log(p) and "flag=--image-name" in n.log(p),
          "IMAGE_NAME is said to mean nothing: " + n.log(p))
    check(n.stop(p) == 0, "exit status")


TESTS = [test_registration, test_claims_api_unreachable, test_health_stream, test_bad_requests, test_same_messages,
         test_second_instance_and_stop, test_half_prepared_at_start, test_options]


def main():
    for t in TESTS:
        t0 = time.time()
        n = Node()
        try:
            t(n)
        except AssertionError as e:
            print("FAIL %s (%.2fs): %s" % (t.__name__, time.time() - t0, e))
            return 1
        finally:
            n.close()
        print("PASS %s (%.2fs)" % (t.__name__, time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
