#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The exporter's HTTP side, black-box on the fake NVML (issue 14 points 7 and 8):
- one readiness flag: /healthz, /health and gpulet_exporter_ready, hammered from several keep-alive
  connections while NVML loads, never disagree (no request sent after a "ready" answer arrived
  sees "not ready" on any endpoint);
- stalled clients (96 connections that send nothing, half a request, or never read, from other
  addresses) never delay or refuse another client's scrape; the scrape latency with them is compared
  with the latency measured without them in the same run; the slots one address may hold are
  bounded (the attacks themselves, with trickling clients: tests/security/test_http_attacks.py);
- keep-alive: several requests on one connection, no Connection: close unless the client asks.
Run by CTest (exporter_http)."""
import http.client
import json
import os
import resource
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exporter_lib import Exporter, fixture  # noqa: E402

STALLED_PER_KIND = 32  # x3 kinds = 96 stalled connections


def fixture_with(name, edit):
    """A private copy of fixture `name` changed by edit(doc); the caller removes its directory."""
    with open(fixture(name)) as f:
        doc = json.load(f)
    edit(doc)
    d = tempfile.mkdtemp(prefix="gpulet-exphttp-")
    path = os.path.join(d, name + ".json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def connect_from(src, port, timeout=5, rcvbuf=None):
    """A TCP connection to the exporter from loopback address src (all of 127/8 is this host)."""
    s = socket.socket()
    s.settimeout(timeout)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def raw_request(port, path, headers=b"", timeout=10):
    """One HTTP/1.1 request on a fresh connection; (status, headers dict lower-case, body, closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
        f = s.makefile("rb")
        resp = http.client.HTTPResponse(s)
        resp.fp = f
        resp.begin()
        body = resp.read()
        hdrs = {k.lower(): v for k, v in resp.getheaders()}
        s.settimeout(2)
        try:
            closed = s.recv(1) == b""
        except socket.timeout:
            closed = False
        return resp.status, hdrs, body, closed
    finally:
        s.close()


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


class Readiness(unittest.TestCase):
    def test_healthz_and_ready_metric_never_disagree(self):
        # NVML's device count takes 1.5 s: the exporter is not ready for that long, then ready
        path = fixture_with("single-t4", lambda d: d.setdefault("delay_ms", {}).update(
            {"nvmlDeviceGetCount_v2": 1500}))
        ex = Exporter(path, ["--kubernetes=false", "--collect-interval", "200"])
        log = []  # (sent, received, endpoint, ready)
        lock = threading.Lock()
        stop = time.time() + 4.0

        def hammer(paths):
            conn = http.client.HTTPConnection("127.0.0.1", ex.port, timeout=10)
            i = 0
            while time.time() < stop:
                p = paths[i % len(paths)]
                i += 1
                sent = time.monotonic()
                conn.request("GET", p)
                r = conn.getresponse()
                body = r.read().decode()
                got = time.monotonic()
                if p == "/metrics":
                    self.assertEqual(r.status, 200)
                    lines = [l for l in body.splitlines() if l.startswith("gpulet_exporter_ready ")]
                    self.assertEqual(len(lines), 1, body[:500])
                    ready = lines[0].split()[1] == "1"
                else:
                    self.assertIn(r.status, (200, 503), body)
                    ready = r.status == 200
                with lock:
                    log.append((sent, got, p, ready))
            conn.close()

        threads = [threading.Thread(target=hammer, args=(ps,)) for ps in
                   (["/metrics", "/healthz"], ["/healthz", "/metrics"], ["/metrics"], ["/healthz"], ["/health"])]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
        finally:
            ex.cleanup()
            os.unlink(path)
            os.rmdir(os.path.dirname(path))
        # the test saw both states on every endpoint, or it proves nothing
        for p in ("/metrics", "/healthz", "/health"):
            states = {r for _, _, q, r in log if q == p}
            self.assertEqual(states, {False, True}, "endpoint %s saw only %s" % (p, states))
        # readiness only goes 0 -> 1 here: once any answer said ready, every request sent after it
        # arrived must say ready too, whichever endpoint either was on
        first_ready_answer = min(got for _, got, _, r in log if r)
        late = [(p, sent - first_ready_answer) for sent, _, p, r in log if not r and sent > first_ready_answer]
        self.assertEqual(late, [], "not ready after a ready answer had arrived (endpoint, seconds later)")
        print("readiness: %d requests, %d not ready, %d ready, none disagreeing" %
              (len(log), sum(1 for x in log if not x[3]), sum(1 for x in log if x[3])))


class Bounded(unittest.TestCase):
    def test_connection_limit_queues_instead_of_refusing(self):
        # a low open-files limit (256) makes the exporter keep 64 descriptors for itself: 192 slots
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        try:
            ex = Exporter(fixture("single-t4"), ["--kubernetes=false"])
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        flood = []
        try:
            ex.wait_for(lambda b: "\ngpulet_exporter_ready 1\n" in b, what="ready")
            fds0 = len(os.listdir("/proc/%d/fd" % ex.proc.pid))
            # one address holds at most a sixteenth of the slots (12 of 192): the rest are closed at once
            flood = [connect_from("127.0.0.2", ex.port) for _ in range(30)]
            time.sleep(0.5)
            fds1 = len(os.listdir("/proc/%d/fd" % ex.proc.pid))
            self.assertLessEqual(fds1 - fds0, 12, "one address held more than its share")
            self.assertGreaterEqual(fds1 - fds0, 10, "the flood did not reach the exporter")
            # from 30 addresses, 10 each: 300 connections, more than the 192 slots
            flood += [connect_from("127.0.1.%d" % (i // 10), ex.port) for i in range(300)]
            time.sleep(0.5)
            fds1 = len(os.listdir("/proc/%d/fd" % ex.proc.pid))
            self.assertLessEqual(fds1 - fds0, 192, "connections past the limit were accepted")
            self.assertGreaterEqual(fds1 - fds0, 150, "the flood did not reach the exporter")
            # a scrape waits in the listen backlog (not refused), behind the ~108 flood connections
            # queued before it, and is answered once enough slots free
            waiting = socket.create_connection(("127.0.0.1", ex.port), timeout=10)
            waiting.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            for s in flood[:180]:
                s.close()
            self.assertTrue(waiting.recv(64).startswith(b"HTTP/1.1 200"))
            waiting.close()
            status, _, _, _ = raw_request(ex.port, "/metrics")
            self.assertEqual(status, 200)
            print("connection limit: exporter fds %d -> %d with %d connections open" % (fds0, fds1, len(flood)))
        finally:
            for s in flood:
                s.close()
            ex.cleanup()


class Stalled(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ex = Exporter(fixture("dgx-a100"), ["--kubernetes=false", "--collect-interval", "1000"])
        cls.ex.wait_for(lambda b: "DCGM_FI_DEV_FB_FREE" in b, what="first sample")

    @classmethod
    def tearDownClass(cls):
        cls.ex.cleanup()

    def scrape_times(self, n):
        out = []
        for _ in range(n):
            t0 = time.monotonic()
            status, _, body, _ = raw_request(self.ex.port, "/metrics", b"Connection: close\r\n")
            out.append(time.monotonic() - t0)
            self.assertEqual(status, 200)
            self.assertIn(b"DCGM_FI_DEV_GPU_TEMP", body)
        return out

    def stall(self):
        # each kind from an address of its own, below the per-address limit (64 of 1024 slots)
        socks = []
        for kind in range(3):
            for _ in range(STALLED_PER_KIND):
                # kind 2: a tiny receive window: the server's answer cannot drain
                s = connect_from("127.0.0.%d" % (kind + 2), self.ex.port, rcvbuf=1024 if kind == 2 else None)
                if kind == 1:
                    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAcc")  # half a request, then nothing
                elif kind == 2:
                    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")  # a request, never read
                socks.append(s)
        return socks

    def test_stalled_connections_never_delay_a_scrape(self):
        self.scrape_times(20)  # warm up
        base = self.scrape_times(200)
        socks = self.stall()
        t_stall = time.monotonic()
        try:
            time.sleep(0.3)  # let the server take them all in
            with_stalled = self.scrape_times(200)
            # the stalled connections are still there (they did not just get dropped before we measured):
            # the silent ones until their 10 s header deadline (HTTPD_HEADERS_S), which a slow run may pass
            alive = 0
            for s in socks[:STALLED_PER_KIND]:
                s.setblocking(False)
                try:
                    alive += s.recv(1) != b""
                except BlockingIOError:
                    alive += 1
            if time.monotonic() - t_stall < 9:
                self.assertEqual(alive, STALLED_PER_KIND)
        finally:
            for s in socks:
                s.close()
        b99, s99 = percentile(base, 99), percentile(with_stalled, 99)
        print("scrape p50/p99 without stalled: %.2f/%.2f ms; with %d stalled: %.2f/%.2f ms; ratio p99 %.2f" %
              (percentile(base, 50) * 1e3, b99 * 1e3, len(socks), percentile(with_stalled, 50) * 1e3, s99 * 1e3,
               s99 / b99))
        # the failure this guards against is a refused scrape or one waiting ~10 s for a timeout;
        # a loaded CI machine may add scheduling noise, never seconds
        self.assertLess(s99, max(5 * b99, b99 + 0.25))

    def test_keep_alive(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.ex.port, timeout=10)
        try:
            socks = set()
            for p in ("/metrics", "/healthz", "/metrics", "/health", "/"):
                conn.request("GET", p)
                r = conn.getresponse()
                r.read()
                self.assertEqual(r.status, 200, p)
                self.assertNotEqual((r.getheader("Connection") or "").lower(), "close", p)
                socks.add(id(conn.sock))
                self.assertIsNotNone(conn.sock, "server closed the connection after " + p)
            self.assertEqual(len(socks), 1, "one connection for all requests")
        finally:
            conn.close()
        # a client that asks for close gets it
        status, hdrs, _, closed = raw_request(self.ex.port, "/metrics", b"Connection: close\r\n")
        self.assertEqual((status, hdrs.get("connection", "").lower(), closed), (200, "close", True))
        # and one that does not ask keeps its connection open
        status, hdrs, _, closed = raw_request(self.ex.port, "/metrics")
        self.assertEqual((status, closed), (200, False))
        self.assertNotEqual(hdrs.get("connection", "").lower(), "close")


if __name__ == "__main__":
    unittest.main(verbosity=2)
