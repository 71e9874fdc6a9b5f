#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet exporter --web-config-file` (exporter-toolkit's web config, docs/reference/dcgm-exporter.md
"Web configuration"), black-box on the fake NVML, judged by real TLS clients (curl, Python's ssl):
- TLS with a certificate made here by the openssl CLI; plain HTTP to the TLS port gets no metrics;
- RequireAndVerifyClientCert: a client certificate of the CA passes, none or another CA's is refused;
- min_version TLS13 refuses a client limited to TLS 1.2;
- basic_auth_users with bcrypt hashes ($2y$ and $2b$) made here by Python's crypt: right password
  200, wrong / absent / unknown user 401 with WWW-Authenticate: Basic, on every path; a flood of
  wrong passwords does not stall scrapes with the right one (figures printed);
- a key or value gpulet cannot honour, a missing file, a key that does not match the certificate:
  exit 1 with a message naming the file and the key, nothing served.
Run by CTest (exporter_webconfig)."""
import base64
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exporter_lib import FAKE, GPULET, Exporter, fixture  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt  # deprecated, still in Debian 12's python3.11: libxcrypt's bcrypt

METRIC = "gpulet_exporter_start_time_seconds"


def run(*cmd, cwd=None):
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_pki(d):
    """CA, server (localhost, 127.0.0.1) and client certificates of it, and a client of another CA."""
    def key_cert(name, subj, ca=None, ext=""):
        if ca is None:
            run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", name + ".key", "-out", name + ".crt", "-subj", subj, "-days", "2", cwd=d)
            return
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext)
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", name + ".key", "-out", name + ".csr", "-subj", subj, cwd=d)
        run("openssl", "x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
            "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext", cwd=d)
    key_cert("ca", "/CN=gpulet-test-ca")
    key_cert("other-ca", "/CN=other-ca")
    key_cert("server", "/CN=localhost", "ca",
             "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    key_cert("client", "/CN=prometheus", "ca",
             "subjectAltName=DNS:prometheus.monitoring\nextendedKeyUsage=clientAuth\n")
    key_cert("rogue", "/CN=prometheus", "other-ca",
             "subjectAltName=DNS:prometheus.monitoring\nextendedKeyUsage=clientAuth\n")


def bcrypt(password, prefix):
    h = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))
    assert h.startswith("$2b$"), h
    return prefix + h[4:]


def curl(url, *args):
    p = subprocess.run(["curl", "-sS", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}", url] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    body, _, code = p.stdout.rpartition("\n")
    return p.returncode, code, body, p.stderr


def basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


def get(url, ctx=None, auth=None, timeout=10):
    req = urllib.request.Request(url)
    if auth:
        req.add_header("Authorization", auth)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


class WebConfig(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gpulet-webcfg-")
        make_pki(cls.dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def config(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)

    def start(self, name, text):
        ex = Exporter(fixture("dgx-a100"), ["--kubernetes=false", "--web-config-file", self.config(name, text)])
        self.addCleanup(ex.cleanup)
        return ex

    def ctx(self, cert=None, maximum=None):
        c = ssl.create_default_context(cafile=self.path("ca.crt"))
        if cert:
            c.load_cert_chain(self.path(cert + ".crt"), self.path(cert + ".key"))
        if maximum:
            c.maximum_version = maximum
        return c

    def test_tls(self):
        # relative file names are relative to the config file's directory, as upstream
        ex = self.start("tls.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n")
        url = "https://127.0.0.1:%d/metrics" % ex.port
        rc, code, body, err = curl(url, "--cacert", self.path("ca.crt"))
        self.assertEqual((rc, code), (0, "200"), err)
        self.assertIn(METRIC, body)
        status, _, body = get(url, self.ctx())
        self.assertEqual(status, 200)
        self.assertIn(METRIC, body)
        # plain HTTP to the TLS port: no answer with metrics
        rc, code, body, err = curl("http://127.0.0.1:%d/metrics" % ex.port)
        self.assertNotEqual(code, "200")
        self.assertNotIn(METRIC, body)
        with self.assertRaises((urllib.error.URLError, ConnectionError, OSError)):
            get("http://127.0.0.1:%d/metrics" % ex.port)
        # a client that does not trust the certificate refuses it
        rc, code, _, _ = curl(url)
        self.assertNotEqual(rc, 0)

    def test_client_certificates(self):
        ex = self.start("mtls.yml", "tls_server_config:\n"
                        "  cert_file: %s\n  key_file: %s\n  client_ca_file: %s\n"
                        "  client_auth_type: RequireAndVerifyClientCert\n"
                        % (self.path("server.crt"), self.path("server.key"), self.path("ca.crt")))
        url = "https://127.0.0.1:%d/metrics" % ex.port
        ca = ["--cacert", self.path("ca.crt")]
        rc, code, body, err = curl(url, *ca, "--cert", self.path("client.crt"), "--key", self.path("client.key"))
        self.assertEqual((rc, code), (0, "200"), err)
        self.assertIn(METRIC, body)
        self.assertEqual(get(url, self.ctx("client"))[0], 200)
        for who, extra in (("no certificate", []),
                           ("another CA's", ["--cert", self.path("rogue.crt"), "--key", self.path("rogue.key")])):
            rc, code, body, err = curl(url, *ca, *extra)
            self.assertNotEqual(rc, 0, who)
            self.assertNotIn(METRIC, body, who)
        for cert in (None, "rogue"):
            with self.assertRaises((urllib.error.URLError, ConnectionError, OSError), msg=str(cert)):
                get(url, self.ctx(cert))

    def test_client_allowed_sans(self):
        ex = self.start("sans.yml", "tls_server_config:\n"
                        "  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: ca.crt\n"
                        "  client_auth_type: RequireAndVerifyClientCert\n"
                        "  client_allowed_sans: [someone.else]\n")
        with self.assertRaises((urllib.error.URLError, ConnectionError, OSError)):
            get("https://127.0.0.1:%d/metrics" % ex.port, self.ctx("client"))

    def test_min_version(self):
        ex = self.start("tls13.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                        "  min_version: TLS13\n")
        url = "https://127.0.0.1:%d/metrics" % ex.port
        self.assertEqual(get(url, self.ctx())[0], 200)
        with self.assertRaises((urllib.error.URLError, ssl.SSLError, OSError)):
            get(url, self.ctx(maximum=ssl.TLSVersion.TLSv1_2))
        rc, _, _, _ = curl(url, "--cacert", self.path("ca.crt"), "--tls-max", "1.2")
        self.assertNotEqual(rc, 0)
        rc, code, _, err = curl(url, "--cacert", self.path("ca.crt"), "--tlsv1.3")
        self.assertEqual((rc, code), (0, "200"), err)

    def test_basic_auth(self):
        ex = self.start("auth.yml", "basic_auth_users:\n  prom: '%s'\n  other: '%s'\n"
                        "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
                        % (bcrypt("s3cret", "$2y$"), bcrypt("pw2", "$2b$")))
        base = "http://127.0.0.1:%d" % ex.port
        t0 = time.monotonic()
        status, hdrs, body = get(base + "/metrics", auth=basic("prom", "s3cret"))
        first = time.monotonic() - t0
        self.assertEqual(status, 200)
        self.assertIn(METRIC, body)
        self.assertEqual(hdrs.get("X-Frame-Options"), "deny")
        t0 = time.monotonic()
        for _ in range(20):
            self.assertEqual(get(base + "/metrics", auth=basic("prom", "s3cret"))[0], 200)
        cached = (time.monotonic() - t0) / 20
        print("basic auth scrape: first (bcrypt cost 10) %.1f ms, cached %.1f ms" % (first * 1e3, cached * 1e3))
        self.assertEqual(get(base + "/metrics", auth=basic("other", "pw2"))[0], 200)  # $2b$
        for what, auth in (("wrong password", basic("prom", "s3cret!")), ("absent", None),
                           ("unknown user", basic("nobody", "s3cret")), ("not basic", "Bearer x"),
                           ("bad base64", "Basic ***"), ("NUL in user", "Basic " +
                                                        base64.b64encode(b"prom\0x:s3cret").decode())):
            for path in ("/metrics", "/healthz", "/", "/nothing"):
                status, hdrs, body = get(base + path, auth=auth)
                self.assertEqual(status, 401, (what, path))
                self.assertEqual(hdrs.get("WWW-Authenticate"), "Basic", (what, path))
                self.assertEqual(hdrs.get("X-Frame-Options"), "deny", (what, path))
                self.assertNotIn(METRIC, body)
        rc, code, body, _ = curl(base + "/metrics", "-u", "prom:s3cret")
        self.assertEqual((rc, code), (0, "200"))
        rc, code, _, _ = curl(base + "/metrics", "-u", "prom:nope")
        self.assertEqual(code, "401")

    def test_tls_with_basic_auth(self):
        ex = self.start("tls-auth.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                        "basic_auth_users:\n  prom: '%s'\n" % bcrypt("s3cret", "$2y$"))
        url = "https://127.0.0.1:%d/metrics" % ex.port
        status, _, body = get(url, self.ctx(), auth=basic("prom", "s3cret"))
        self.assertEqual(status, 200)
        self.assertIn(METRIC, body)
        status, hdrs, _ = get(url, self.ctx(), auth=basic("prom", "wrong"))
        self.assertEqual((status, hdrs.get("WWW-Authenticate")), (401, "Basic"))
        rc, code, body, err = curl(url, "--cacert", self.path("ca.crt"), "-u", "prom:s3cret")
        self.assertEqual((rc, code), (0, "200"), err)
        rc, code, _, _ = curl(url, "--cacert", self.path("ca.crt"))
        self.assertEqual(code, "401")

    def test_wrong_password_flood_does_not_stall_scrapes(self):
        ex = self.start("flood.yml", "basic_auth_users:\n  prom: '%s'\n" % bcrypt("s3cret", "$2y$"))
        url = "http://127.0.0.1:%d/metrics" % ex.port
        self.assertEqual(get(url, auth=basic("prom", "s3cret"))[0], 200)  # remembered from now on
        stop = threading.Event()
        answers = {}
        lock = threading.Lock()

        def flood(k):
            i = 0
            while not stop.is_set():
                code = get(url, auth=basic("prom", "wrong-%d-%d" % (k, i)), timeout=30)[0]
                with lock:
                    answers[code] = answers.get(code, 0) + 1
                i += 1
        threads = [threading.Thread(target=flood, args=(k,)) for k in range(24)]
        for t in threads:
            t.start()
        times = []
        try:
            time.sleep(0.5)
            for _ in range(20):
                t0 = time.monotonic()
                status, _, body = get(url, auth=basic("prom", "s3cret"))
                times.append(time.monotonic() - t0)
                self.assertEqual(status, 200)
                time.sleep(0.05)
        finally:
            stop.set()
            for t in threads:
                t.join()
        times.sort()
        print("during a flood of wrong passwords (24 clients, answers %s): good scrapes median %.1f ms, "
              "max %.1f ms" % (answers, times[len(times) // 2] * 1e3, times[-1] * 1e3))
        self.assertEqual(set(answers) - {401, 429}, set())
        self.assertIn(429, answers, "the queue of password checks is bounded")

    def refused(self, name, text, *needles, args=()):
        p = self.config(name, text) if text is not None else self.path(name)
        r = subprocess.run([GPULET, "exporter", "--address", "127.0.0.1:0", "--kubernetes=false",
                            "--nvml-library", FAKE, "--web-config-file", p] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertNotIn("Starting exporter", r.stdout)
        for n in (p,) + needles:
            self.assertIn(n, r.stdout)
        return r.stdout

    def test_refused(self):
        tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        self.refused("unknown.yml", "tls_server_config:\n  cert_fil: x\n", "cert_fil", "unknown key")
        self.refused("unknown-top.yml", "basic_auth:\n  a: b\n", "basic_auth", "unknown key")
        self.refused("http2.yml", tls + "http_server_config:\n  http2: true\n", "http2", "HTTP/1.1")
        self.refused("ciphers.yml", tls + "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n", "cipher_suites")
        self.refused("ratelimit.yml", "rate_limit:\n  interval: 1s\n", "rate_limit")
        self.refused("version.yml", tls + "  min_version: TLS14\n", "min_version", "TLS13")
        self.refused("auth-type.yml", tls + "  client_auth_type: Sometimes\n", "client_auth_type")
        self.refused("no-ca.yml", tls + "  client_auth_type: RequireAndVerifyClientCert\n", "client_ca_file")
        self.refused("header.yml", "http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
                     "X-Frame-Options", "deny")
        self.refused("bad-hash.yml", "basic_auth_users:\n  prom: secret\n", "basic_auth_users.prom", "bcrypt")
        self.refused("dup.yml", "basic_auth_users:\n  prom: a\n  prom: b\n", "duplicate key")
        self.refused("missing.yml", None, "missing.yml")
        self.refused("no-cert.yml", "tls_server_config:\n  cert_file: nothere.crt\n  key_file: server.key\n",
                     "nothere.crt", "cert_file")
        self.refused("mismatch.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: client.key\n",
                     "server.crt", "client.key")
        self.refused("env.yml", "bogus: 1\n", "bogus")


if __name__ == "__main__":
    unittest.main(verbosity=2)
