# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the exporter's black-box tests and benchmark: run `gpulet exporter` on the fake
NVML, scrape it, run the python3-grpcio PodResources stand-in; run `gpulet doctor --serve-metrics`,
the other endpoint on the same HTTP server."""
import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

SRC = os.environ.get("GPULET_SRC", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("GPULET_BUILD", os.path.join(SRC, "build"))
GPULET = os.environ.get("GPULET", os.path.join(BUILD, "gpulet"))
FAKE = os.environ.get("FAKE_NVML_LIB", os.path.join(BUILD, "fakenvml", "libnvidia-ml.so.1"))
FIXTURES = os.path.join(SRC, "tests", "fixtures")
PY = "/usr/bin/python3"


_CHILDREN = []


@atexit.register
def _kill_children():
    """A child left running by a failed test keeps CTest's output pipe open, and CTest then waits for
    its timeout instead of reporting the failure."""
    for p in _CHILDREN:
        if p.poll() is None:
            p.kill()
            p.wait()


def stop_daemon(proc, log, timeout):
    """SIGTERM, a kill after timeout s; closes its log; the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    log.close()
    return proc.returncode


def fixture(name):
    return os.path.join(FIXTURES, name + ".json")


def write_json_atomic(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)
    # the fake reloads on inode/size/mtime change; make sure mtime moves even within one tick
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))


class Exporter:
    """`gpulet exporter` on a fake NVML fixture, on a free port, with its log captured."""

    def __init__(self, fixture_path, args=(), env=None, root=None):
        self.dir = tempfile.mkdtemp(prefix="gpulet-exp-")
        self.fixture = os.path.join(self.dir, "fixture.json")
        shutil.copy(fixture_path, self.fixture)
        self.events = os.path.join(self.dir, "events")
        open(self.events, "w").close()
        self.log_path = os.path.join(self.dir, "log")
        e = dict(os.environ)
        e.update({"FAKE_NVML_FIXTURE": self.fixture, "FAKE_NVML_EVENTS": self.events, "NODE_NAME": "node-a"})
        e.update(env or {})
        cmd = [GPULET, "exporter", "--address", "127.0.0.1:0", "--nvml-library", FAKE,
               "--root", root or self.dir] + list(args)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=e)
        _CHILDREN.append(self.proc)
        self.port = self._wait_port()

    def _wait_port(self):
        for _ in range(200):
            m = re.search(r'msg="Starting exporter" .*port=(\d+)', self.text())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError("exporter exited %s:\n%s" % (self.proc.returncode, self.text()))
            time.sleep(0.05)
        raise RuntimeError("exporter did not start:\n" + self.text())

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def get(self, path="/metrics", method="GET"):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.headers, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read().decode()

    def scrape(self):
        status, headers, body = self.get()
        assert status == 200, (status, body)
        return body

    def wait_for(self, pred, timeout=15, what="condition"):
        deadline = time.time() + timeout
        body = ""
        while time.time() < deadline:
            body = self.scrape()
            if pred(body):
                return body
            time.sleep(0.1)
        raise AssertionError("timed out waiting for %s; last scrape:\n%s\nlog:\n%s" % (what, body[-3000:], self.text()))

    def add_event(self, line):
        with open(self.events, "a") as f:
            f.write(line + "\n")

    def stop(self, timeout=10):
        return stop_daemon(self.proc, self.log, timeout)

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Doctor:
    """`gpulet doctor --serve-metrics` on an empty node root below dir (the fake NVML on `fixture_name`),
    on a free port, with its log captured; .port is None when it did not start (see .text())."""

    def __init__(self, dir, args=(), fixture_name="single-t4"):
        self.log_path = os.path.join(dir, "doctor.log")
        self.log = open(self.log_path, "w")
        root = os.path.join(dir, "root")
        os.makedirs(root, exist_ok=True)
        self.proc = subprocess.Popen([GPULET, "doctor", "--root", root, "--nvml-library", FAKE, "--serve-metrics",
                                      "127.0.0.1:0", "--node-name", "node-a", "--interval", "3600"] + list(args),
                                     env=dict(os.environ, FAKE_NVML_FIXTURE=fixture(fixture_name)),
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        _CHILDREN.append(self.proc)
        self.port = None
        for _ in range(200):
            m = re.search(r'msg="Serving doctor metrics" .*port=(\d+)', self.text())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self, timeout=15):
        return stop_daemon(self.proc, self.log, timeout)

    cleanup = stop


def series(body, name):
    """[(labels dict, value)] of metric `name` in a scrape."""
    out = []
    for line in body.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        m = re.match(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        if not m or m.group(1) != name:
            continue
        labels = dict(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out.append((labels, float(m.group(3))))
    return out


class PodResources:
    """tests/integration/podres_standin.py serving pods from a JSON file on SOCKET."""

    def __init__(self, sock, pods):
        self.dir = tempfile.mkdtemp(prefix="gpulet-podres-")
        self.sock = sock
        os.makedirs(os.path.dirname(sock), exist_ok=True)
        self.pods = os.path.join(self.dir, "pods.json")
        self.set(pods)
        ready = os.path.join(self.dir, "ready")
        self.proc = subprocess.Popen([PY, os.path.join(SRC, "tests", "integration", "podres_standin.py"), sock,
                                      self.pods, "--ready", ready])
        _CHILDREN.append(self.proc)
        for _ in range(300):
            if os.path.exists(ready):
                return
            if self.proc.poll() is not None:
                raise RuntimeError("podres stand-in exited %s" % self.proc.returncode)
            time.sleep(0.05)
        raise RuntimeError("podres stand-in did not start")

    def set(self, pods):
        tmp = self.pods + ".tmp"
        with open(tmp, "w") as f:
            json.dump(pods, f)
        os.replace(tmp, self.pods)

    def stop(self):
        """Idempotent: tests call it mid-way (kubelet goes away) and again on the way out."""
        if self.proc.poll() is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            # a stand-in left running keeps CTest's output pipe open: the test would hang to its timeout
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
