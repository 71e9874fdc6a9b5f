# SPDX-License-Identifier: Apache-2.0
"""Shared harness of the plugin integration tests: a fake node (fixture + root made by
tests/lib/mkroot.sh), the kubelet stand-in as its own process, `gpulet plugin` as its own
process, and direct python3-grpcio calls to the plugin sockets. Everything lives in one temp
dir that is removed at the end. A missing prerequisite fails loudly, never skips."""
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SRC = os.environ.get("GPULET_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GPULET_BUILD") or os.path.join(SRC, "build")
GPULET = os.environ.get("GPULET") or os.path.join(BUILD, "gpulet")
FAKE_NVML_LIB = os.environ.get("FAKE_NVML_LIB") or os.path.join(BUILD, "fakenvml", "libnvidia-ml.so.1")
FIXTURES = os.environ.get("GPULET_FIXTURES") or os.path.join(SRC, "tests", "fixtures")
MKROOT = os.environ.get("GPULET_MKROOT") or os.path.join(SRC, "tests", "lib", "mkroot.sh")
STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kubelet_standin.py")

sys.path.insert(0, os.path.join(BUILD, "gen", "py"))
import grpc  # noqa: E402
import deviceplugin_pb2 as pb  # noqa: E402

# gpulet built with -fsanitize=address (the asan-test build): see plugin_env()
SANITIZED = b"__asan_init" in open(GPULET, "rb").read() if os.path.exists(GPULET) else False

for _p in (GPULET, FAKE_NVML_LIB, MKROOT):
    if not os.path.exists(_p):
        raise SystemExit("FAIL: prerequisite missing: %s (build everything first)" % _p)


def fail(msg):
    raise AssertionError(msg)


def check(cond, msg):
    if not cond:
        fail(msg)


class Events:
    """JSON lines of a child's stdout, collected by a thread."""

    def __init__(self, stream):
        self.items = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.cv:
                self.items.append(ev)
                self.cv.notify_all()

    def wait(self, pred, timeout=10, start=0, what="event"):
        deadline = time.time() + timeout
        with self.cv:
            while True:
                for ev in self.items[start:]:
                    if pred(ev):
                        return ev
                left = deadline - time.time()
                if left <= 0:
                    fail("timed out after %ss waiting for %s; saw %s" % (timeout, what, self.items[start:][-10:]))
                self.cv.wait(left)

    def mark(self):
        with self.cv:
            return len(self.items)


class Harness:
    def __init__(self, fixture="dgx-a100", mkroot_args=(), tmp=None):
        """The node in a new temp dir, or in TMP (made here; `make demo` keeps it after close())."""
        if tmp:
            os.makedirs(tmp)
        self.tmp = tmp or tempfile.mkdtemp(prefix="gpulet-plugin-")
        self.dp = os.path.join(self.tmp, "device-plugins")
        self.root = os.path.join(self.tmp, "root")
        self.fixture = os.path.join(self.tmp, "fixture.json")
        shutil.copy(os.path.join(FIXTURES, fixture + ".json"), self.fixture)
        os.makedirs(self.dp)
        r = subprocess.run([MKROOT, *mkroot_args, self.root, self.fixture], capture_output=True, text=True,
                           env=dict(os.environ, GPULET_BUILD=BUILD))
        check(r.returncode == 0, "mkroot failed: %s %s" % (r.stdout, r.stderr))
        self.standin = None
        self.plugin = None
        self.log_path = os.path.join(self.tmp, "plugin.log")
        self.events_file = os.path.join(self.tmp, "nvml-events")
        open(self.events_file, "w").close()

    # -- the node ---------------------------------------------------------------------------
    def fixture_data(self):
        with open(self.fixture) as f:
            return json.load(f)

    def write_fixture(self, data):
        tmp = self.fixture + ".new"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.rename(tmp, self.fixture)

    def nvml_event(self, line):
        """Queue an NVML event for nvmlEventSetWait (tests/fakenvml/README.md, Events)."""
        with open(self.events_file, "a") as f:
            f.write(line + "\n")

    def mig_minor(self, gpu_minor, gi, ci=None):
        """Cap minor from the root's /proc/driver/nvidia-caps/mig-minors, read independently."""
        key = "gpu%d/gi%d/access" % (gpu_minor, gi) if ci is None else "gpu%d/gi%d/ci%d/access" % (gpu_minor, gi, ci)
        with open(os.path.join(self.root, "proc/driver/nvidia-caps/mig-minors")) as f:
            for line in f:
                k, _, v = line.strip().partition(" ")
                if k == key:
                    return int(v)
        fail("no %s in mig-minors" % key)

    # -- the kubelet stand-in ---------------------------------------------------------------
    def start_standin(self):
        self.standin = subprocess.Popen(["/usr/bin/python3", STANDIN, self.dp], stdout=subprocess.PIPE,
                                        text=True, env=dict(os.environ, GPULET_BUILD=BUILD))
        self.events = Events(self.standin.stdout)
        return self.events.wait(lambda e: e["event"] == "listening", what="stand-in listening")

    def kill_standin(self):
        if self.standin:
            self.standin.kill()
            self.standin.wait()
            self.standin = None

    # -- the plugin -------------------------------------------------------------------------
    def plugin_env(self, extra=None):
        env = dict(os.environ, FAKE_NVML_FIXTURE=self.fixture, FAKE_NVML_EVENTS=self.events_file,
                   GRPC_VERBOSITY="error")
        for k in list(env):  # the plugin's own env vars must come from the test only
            if k in ("MIG_STRATEGY", "DEVICE_LIST_STRATEGY", "CONFIG_FILE", "PASS_DEVICE_SPECS",
                     "DEVICE_ID_STRATEGY", "KUBELET_SOCKET", "DP_DEVICE_PLUGIN_PATH", "NVIDIA_DRIVER_ROOT",
                     "NVIDIA_DEV_ROOT", "FAIL_ON_INIT_ERROR", "DP_DISABLE_HEALTHCHECKS", "DP_ENABLE_HEALTHCHECKS"):
                del env[k]
        if SANITIZED:
            # The fake NVML keeps its parsed fixture in static storage after the last nvmlShutdown and
            # nvml_close() dlclose()s it: LeakSanitizer would count that JSON as leaked. Preloading the
            # fake keeps it mapped (dlclose only drops a reference), so leak checking stays exact.
            env["LD_PRELOAD"] = FAKE_NVML_LIB
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
        env.update(extra or {})
        return env

    def base_args(self):
        return ["--nvml-library", FAKE_NVML_LIB, "--root", self.root, "--device-plugin-path", self.dp,
                "--kubelet-socket", os.path.join(self.dp, "kubelet.sock")]

    def start_plugin(self, *args, env=None, wait_resources=("nvidia.com/gpu",)):
        self.log = open(self.log_path, "a")
        self.log_start = os.path.getsize(self.log_path)
        mark = self.events.mark() if self.standin else 0
        self.plugin = subprocess.Popen([GPULET, "plugin", *self.base_args(), *args], stdout=self.log,
                                       stderr=subprocess.STDOUT, env=self.plugin_env(env))
        for res in wait_resources:
            self.wait_list(res, start=mark)
        return mark

    def wait_list(self, resource, start=0, pred=lambda devs: True, timeout=10):
        return self.events.wait(lambda e: e["event"] == "list" and e["resource"] == resource and pred(e["devices"]),
                                start=start, timeout=timeout, what="ListAndWatch of %s" % resource)

    def log_text(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_log(self, pattern, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = re.search(pattern, self.log_text())
            if m:
                return m
            time.sleep(0.02)
        fail("plugin log never matched %r:\n%s" % (pattern, self.log_text()[-3000:]))

    def stop_plugin(self, sig=signal.SIGTERM, timeout=10):
        p, self.plugin = self.plugin, None
        if not p:
            return None
        p.send_signal(sig)
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            fail("plugin did not exit within %ss of %s" % (timeout, sig))

    def check_alive(self):
        check(self.plugin.poll() is None, "plugin died (rc=%s):\n%s" % (self.plugin.poll(), self.log_text()[-3000:]))

    # -- gRPC to the plugin -----------------------------------------------------------------
    def sock(self, resource):
        return os.path.join(self.dp, "nvidia-%s.sock" % resource.split("/", 1)[1])

    def call(self, resource, method, req, resp_cls, timeout=5):
        with grpc.insecure_channel("unix:" + self.sock(resource)) as ch:
            fn = ch.unary_unary("/v1beta1.DevicePlugin/" + method, request_serializer=lambda m: m.SerializeToString()
                                if hasattr(m, "SerializeToString") else m,
                                response_deserializer=resp_cls.FromString)
            return fn(req, timeout=timeout)

    def allocate(self, resource, *containers):
        req = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=list(c))
                                                     for c in containers])
        return self.call(resource, "Allocate", req, pb.AllocateResponse)

    def allocate_error(self, resource, *containers):
        try:
            self.allocate(resource, *containers)
        except grpc.RpcError as e:
            return e
        fail("Allocate of %s on %s succeeded, expected an error" % (containers, resource))

    def close(self, keep=False):
        if self.plugin:
            self.plugin.kill()
            self.plugin.wait()
        self.kill_standin()
        if not keep:
            shutil.rmtree(self.tmp, ignore_errors=True)


def run(test):
    """Run test(h) with a fresh harness; print PASS/FAIL with the elapsed time."""
    t0 = time.time()
    h = None
    try:
        h = Harness(**getattr(test, "harness_args", {}))
        test(h)
    except AssertionError as e:
        print("FAIL %s (%.2fs): %s" % (test.__name__, time.time() - t0, e))
        if h and os.path.exists(h.log_path):
            print("--- plugin log (tail) ---\n" + h.log_text()[-4000:])
        raise SystemExit(1)
    finally:
        if h:
            h.close()
    print("PASS %s (%.2fs)" % (test.__name__, time.time() - t0))


def dmap(m):
    return dict(m)
