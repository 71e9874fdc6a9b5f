#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile network clients against gpulet's HTTP endpoints: `gpulet exporter` (:9400, on the fake
NVML) and `gpulet doctor --serve-metrics` (:9402). Both run on one server (src/web/httpd.c); the
attacks are those of issue 30 items 6-8, each with a good client that must still be served while
the attack runs. Every flood comes from loopback addresses of its own (all of 127/8 is this host),
the good client from 127.0.0.1 unless said otherwise. Floods are sized for a loaded 2-core machine:
the assertions are "served within N s" with generous N, never latency figures (those are in
bench/bench_http_attacks.py).

  lockout    a fresh exporter with TLS and basic auth (bcrypt cost 10): 24 clients from another address
             opening a connection per guess, then 24 keep-alive clients on the good client's own
             address, all sending wrong passwords; each user's first right-password scrape (its
             password not yet known good) is 200, not 429
  slowloris  plain HTTP, 192 slots (open-files limit 256): connections trickling a header line every
             second, from one address (250) and then from 24 addresses (288, reconnecting when
             closed); a new client's scrape is answered
  tls        the same from 24 addresses with a TLS ClientHello trickled one byte a second
  doctor     the doctor's endpoint: --web-config-file (TLS, basic auth) is honoured as the exporter's;
             a trickle from one address and from 20 addresses does not keep a new client out

usage: test_http_attacks.py GROUP...  (no argument = all)
"""
import base64
import errno
import http.client
import os
import resource
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from exporter_lib import GPULET, Doctor, Exporter, fixture  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt  # deprecated, still in Debian 12's python3.11: libxcrypt's bcrypt

SERVED_WITHIN = 10    # s: a good client's request while a per-address flood runs
DEADLINE_WAIT = 45    # s: the same while floods from many addresses hold every slot (deadline 10 s + slack)
failures = []


def check(ok, what):
    print("%s %s" % ("ok  " if ok else "FAIL", what), flush=True)
    if not ok:
        failures.append(what)


def basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


def bcrypt(password):
    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))


def make_cert(d):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", "server.key", "-out", "server.crt", "-subj", "/CN=localhost", "-days", "2",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   cwd=d, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ctx = ssl.create_default_context(cafile=os.path.join(d, "server.crt"))
    return "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n", ctx


def client_hello(ctx):
    """The bytes of a real TLS ClientHello (Python's ssl), for the trickle."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = ctx.wrap_bio(inc, out, server_hostname="localhost")
    try:
        o.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def request(port, path="/metrics", src="127.0.0.1", ctx=None, auth=None, timeout=SERVED_WITHIN):
    """One request on a new connection from src: (status or an error text, seconds)."""
    t0 = time.monotonic()
    try:
        s = socket.socket()
        s.settimeout(timeout)
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        if ctx:
            s = ctx.wrap_socket(s, server_hostname="localhost")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.sock = s
        conn.request("GET", path, headers={"Authorization": auth} if auth else {})
        r = conn.getresponse()
        r.read()
        conn.close()
        return r.status, time.monotonic() - t0
    except (OSError, http.client.HTTPException) as e:
        return "%s: %s" % (type(e).__name__, e), time.monotonic() - t0


class Trickle:
    """per_source connections from each source address that send `stream` slowly: `first` bytes at
    once, then `step` bytes every second; a connection the server closed is opened again on the next
    tick (the attack keeps its pressure). One thread, non-blocking sockets."""

    def __init__(self, port, sources, per_source, stream, first, step):
        self.port, self.stream, self.first, self.step = port, stream, first, step
        self.slots = [[src, None, 0] for src in sources for _ in range(per_source)]  # src, socket, sent
        self.stop_ = threading.Event()
        self.connects = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open(self, slot):
        s = socket.socket()
        s.setblocking(False)
        s.bind((slot[0], 0))
        s.connect_ex(("127.0.0.1", self.port))
        slot[1], slot[2] = s, 0
        self.connects += 1

    def alive(self, s):
        try:
            return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            return True
        except OSError as e:
            return e.errno in (errno.ENOTCONN, errno.EAGAIN)  # still connecting

    def tick(self):
        for slot in self.slots:
            if slot[1] is None or not self.alive(slot[1]):
                if slot[1] is not None:
                    slot[1].close()
                self.open(slot)
                continue
            n = self.first if slot[2] == 0 else self.step
            chunk = self.stream[slot[2]:slot[2] + n]
            try:
                slot[2] += slot[1].send(chunk) if chunk else 0
            except (BlockingIOError, OSError):
                pass

    def run(self):
        while not self.stop_.is_set():
            self.tick()
            self.stop_.wait(1.0)

    def start(self):
        for slot in self.slots:
            self.open(slot)
        self.thread.start()
        return self

    def stop(self):
        self.stop_.set()
        self.thread.join()
        for slot in self.slots:
            if slot[1] is not None:
                slot[1].close()


def http_stream():
    return b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-Slow-%d: y\r\n" % i for i in range(5000))


def exporter(args, nofile=None):
    """`gpulet exporter` with a lower open-files limit when given (it keeps 64 for itself)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if nofile:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))
    try:
        return Exporter(fixture("single-t4"), ["--kubernetes=false"] + list(args))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def finish(ex):
    """Stop the exporter: it exits 0 after the attack (a sanitizer build exits otherwise on a leak or a
    use after free, e.g. of a request still waiting for its password check)."""
    rc = ex.stop()
    check(rc == 0, "the exporter exits 0 after the attack: %s\n%s" % (rc, ex.text()[-3000:]))
    ex.cleanup()


def sources(prefix, n):
    return ["%s.%d" % (prefix, i + 1) for i in range(n)]


def flood_then_serve(what, port, pid, trickle, expect_held, within, **req):
    """Start the trickle, check it holds the server's slots, then time a good client's request."""
    fds0, settled = fds(pid), time.monotonic() + 10
    while time.monotonic() < settled:  # the connections of an earlier flood closed
        time.sleep(1)
        n = fds(pid)
        if n == fds0:
            break
        fds0 = n
    trickle.start()
    try:
        time.sleep(3)  # every flood connection accepted, or waiting in the listen backlog
        held = fds(pid) - fds0
        check(held >= expect_held, "%s: the flood holds %d connections (>= %d): the attack is real"
              % (what, held, expect_held))
        status, secs = request(port, timeout=within, **req)
        check(status == 200, "%s: a new client is served within %d s: %s after %.1f s" % (what, within, status, secs))
        return secs
    finally:
        trickle.stop()


class PasswordFlood:
    """24 clients from src sending wrong passwords for user over TLS as fast as they are answered:
    on one keep-alive connection each, or (per_conn) on a new connection per guess. .answers counts
    what came back."""

    def __init__(self, port, ctx, src, user, per_conn, clients=24):
        self.port, self.ctx, self.src, self.user, self.per_conn = port, ctx, src, user, per_conn
        self.stop_ = threading.Event()
        self.answers = {}
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(k,), daemon=True) for k in range(clients)]
        for t in self.threads:
            t.start()

    def connect(self):
        s = socket.socket()
        s.settimeout(30)
        s.bind((self.src, 0))
        s.connect(("127.0.0.1", self.port))
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.sock = self.ctx.wrap_socket(s, server_hostname="localhost")
        return conn

    def run(self, k):
        conn, i = None, 0
        while not self.stop_.is_set():
            try:
                conn = conn or self.connect()
                conn.request("GET", "/metrics", headers={"Authorization": basic(self.user, "wrong-%d-%d" % (k, i))})
                r = conn.getresponse()
                r.read()
                code = r.status
                if self.per_conn:
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as e:
                code = type(e).__name__
                conn = None
            with self.lock:
                self.answers[code] = self.answers.get(code, 0) + 1
            i += 1

    def stop(self):
        self.stop_.set()
        for t in self.threads:
            t.join(60)


def group_lockout(tmp):
    tls, ctx = make_cert(tmp)
    users = ["prom%d" % i for i in range(6)]
    cfg = os.path.join(tmp, "web.yml")
    with open(cfg, "w") as f:
        f.write(tls + "basic_auth_users:\n" + "".join("  %s: '%s'\n" % (u, bcrypt("pw-" + u)) for u in users))
    ex = exporter(["--web-config-file", cfg])
    try:
        # the other address first: the scraper's address has no failures of its own yet
        for label, src, per_conn in (("24 clients on another address, a connection per guess", "127.0.2.1", True),
                                     ("24 keep-alive clients on the scraper's address", "127.0.0.1", False)):
            flood = PasswordFlood(ex.port, ctx, src, users[0], per_conn)
            try:
                time.sleep(3)  # every flooder has had wrong answers (and its connection its strikes)
                for u in users[:3] if per_conn else users[3:]:
                    status, secs = request(ex.port, ctx=ctx, auth=basic(u, "pw-" + u))
                    check(status == 200, "%s: %s's first scrape (its password not yet checked): %s after %.2f s"
                          % (label, u, status, secs))
                    time.sleep(0.5)
            finally:
                flood.stop()
            check(401 in flood.answers, "%s: the flood was checked and refused (%s)" % (label, flood.answers))
    finally:
        finish(ex)


def group_slowloris(tmp):
    ex = exporter([], nofile=256)  # 192 slots, 12 per address
    try:
        flood_then_serve("one address, 250 trickling connections", ex.port, ex.proc.pid,
                         Trickle(ex.port, ["127.0.3.1"], 250, http_stream(), 25, 12), 10, SERVED_WITHIN)
        flood_then_serve("24 addresses, 288 trickling connections", ex.port, ex.proc.pid,
                         Trickle(ex.port, sources("127.0.4", 24), 12, http_stream(), 25, 12), 150,
                         DEADLINE_WAIT)
    finally:
        finish(ex)


def group_tls(tmp):
    tls, ctx = make_cert(tmp)
    cfg = os.path.join(tmp, "web.yml")
    with open(cfg, "w") as f:
        f.write(tls)
    ex = exporter(["--web-config-file", cfg], nofile=256)
    try:
        hello = client_hello(ctx)
        flood_then_serve("TLS: 24 addresses, 288 ClientHellos trickled", ex.port, ex.proc.pid,
                         Trickle(ex.port, sources("127.0.5", 24), 12, hello, 5, 1), 150, DEADLINE_WAIT,
                         ctx=ctx)
        flood_then_serve("TLS: one address, 250 ClientHellos trickled", ex.port, ex.proc.pid,
                         Trickle(ex.port, ["127.0.6.1"], 250, hello, 5, 1), 10, SERVED_WITHIN, ctx=ctx)
    finally:
        finish(ex)


def stopped(d):
    rc = d.stop()
    if d.port is not None:
        check(rc == 0, "the doctor exits 0 after the attack: %s\n%s" % (rc, d.text()[-3000:]))


def doctor_web_config(d, ctx):
    status, _ = request(d.port, "/metrics", ctx=ctx, auth=basic("prom", "s3cret"))
    deadline = time.monotonic() + 30
    while status == 503 and time.monotonic() < deadline:  # the first walk is running
        time.sleep(0.2)
        status, _ = request(d.port, "/metrics", ctx=ctx, auth=basic("prom", "s3cret"))
    check(status == 200, "doctor over TLS with the right password: %s" % status)
    status, _ = request(d.port, "/", ctx=ctx, auth=basic("prom", "s3cret"))
    check(status == 200, "doctor's page over TLS with the right password: %s" % status)
    for path in ("/metrics", "/"):  # the page is behind the same basic auth as the metrics
        for what, kw in (("wrong password", dict(ctx=ctx, auth=basic("prom", "nope"))), ("no password", dict(ctx=ctx))):
            status, _ = request(d.port, path, **kw)
            check(status == 401, "doctor over TLS, %s %s: %s" % (path, what, status))
    status, _ = request(d.port, "/metrics")
    check(status != 200, "doctor, plain HTTP to its TLS port: no metrics (%s)" % status)


def group_doctor(tmp):
    tls, ctx = make_cert(tmp)
    cfg = os.path.join(tmp, "web.yml")
    with open(cfg, "w") as f:
        f.write(tls + "basic_auth_users:\n  prom: '%s'\n" % bcrypt("s3cret"))
    d = Doctor(tmp, ["--web-config-file", cfg])
    try:
        check(d.port is not None, "doctor --serve-metrics --web-config-file starts" +
              ("" if d.port else ": " + d.text()[-300:]))
        if d.port is not None:
            doctor_web_config(d, ctx)
    finally:
        stopped(d)
    d = Doctor(tmp)  # plain HTTP: 64 slots, 4 per address
    try:
        check(d.port is not None, "doctor --serve-metrics starts" + ("" if d.port else ": " + d.text()[-300:]))
        if d.port is None:
            return
        deadline = time.monotonic() + 30
        while request(d.port, "/")[0] == 503 and time.monotonic() < deadline:  # the page of the first walk
            time.sleep(0.2)
        flood_then_serve("doctor: one address, 80 trickling connections", d.port, d.proc.pid,
                         Trickle(d.port, ["127.0.7.1"], 80, http_stream(), 25, 12), 3, SERVED_WITHIN, path="/")
        flood_then_serve("doctor: 20 addresses, 80 trickling connections", d.port, d.proc.pid,
                         Trickle(d.port, sources("127.0.8", 20), 4, http_stream(), 25, 12), 14, DEADLINE_WAIT,
                         path="/")
    finally:
        stopped(d)
    r = subprocess.run([GPULET, "doctor", "--web-config-file", cfg], capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "--serve-metrics" in r.stderr,
          "--web-config-file without --serve-metrics is refused (exit %d: %s)" % (r.returncode, r.stderr.strip()))


GROUPS = {"lockout": group_lockout, "slowloris": group_slowloris, "tls": group_tls, "doctor": group_doctor}


def main():
    names = sys.argv[1:] or list(GROUPS)
    for n in names:
        if n not in GROUPS:
            print("unknown group %s (groups: %s)" % (n, ", ".join(GROUPS)))
            return 2
    for n in names:
        tmp = tempfile.mkdtemp(prefix="gpulet-httpatk-")
        try:
            print("== %s" % n, flush=True)
            GROUPS[n](tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d failed:\n  %s" % (len(failures), "\n  ".join(failures)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
