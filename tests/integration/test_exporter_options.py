#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet exporter`'s options against dcgm-exporter's (docs/reference/dcgm-exporter.md section 5):
every BoolFlag upstream takes `--flag=false`; an empty web config is plain HTTP as exporter-toolkit's;
an empty text option the exporter cannot serve is refused naming where the "" came from; --devices
and --kubernetes-gpu-id-type are checked where they are read, so a bad value names its real source.
Env GPULET, FAKE_NVML_LIB, GPULET_SRC."""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exporter_lib import FAKE, GPULET, Exporter, fixture, series  # noqa: E402

# NVIDIA/dcgm-exporter d5e5f51 pkg/cmd/app.go: every cli.BoolFlag, by name and env var.
UPSTREAM_BOOLS = [
    ("kubernetes", "DCGM_EXPORTER_KUBERNETES"),
    ("use-old-namespace", "DCGM_EXPORTER_USE_OLD_NAMESPACE"),
    ("kubernetes-enable-pod-labels", "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS"),
    ("kubernetes-enable-pod-uid", "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID"),
    ("no-hostname", "DCGM_EXPORTER_NO_HOSTNAME"),
    ("fake-gpus", "DCGM_EXPORTER_USE_FAKE_GPUS"),
    ("replace-blanks-in-model-name", "DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME"),
    ("debug", "DCGM_EXPORTER_DEBUG"),
    ("enable-dcgm-log", "DCGM_EXPORTER_ENABLE_DCGM_LOG"),
    ("kubernetes-virtual-gpus", "KUBERNETES_VIRTUAL_GPUS"),
    ("dump-enabled", "DCGM_EXPORTER_DUMP_ENABLED"),
    ("dump-compression", "DCGM_EXPORTER_DUMP_COMPRESSION"),
    ("kubernetes-enable-dra", "KUBERNETES_ENABLE_DRA"),
    ("disable-startup-validate", "DISABLE_STARTUP_VALIDATE"),
    ("enable-gpu-bind-unbind-watch", "DCGM_EXPORTER_ENABLE_GPU_BIND_UNBIND_WATCH"),
    ("enable-pprof", "DCGM_EXPORTER_ENABLE_PPROF"),
    ("web-systemd-socket", "DCGM_EXPORTER_SYSTEMD_SOCKET"),
]
# dcgm-exporter 4.8.4 adds (pkg/cmd/app.go: CLIEnableExporterMetrics, CLIHealthRequireGPUs, CLIContainerLabels)
UPSTREAM_BOOLS += [
    ("enable-exporter-metrics", "DCGM_EXPORTER_ENABLE_EXPORTER_METRICS"),
    ("health-require-gpus", "DCGM_EXPORTER_HEALTH_REQUIRE_GPUS"),
    ("container-labels", "DCGM_EXPORTER_CONTAINER_LABELS"),
]
# Names of dcgm-exporter's env vars, cleared so the caller's environment cannot steer a test.
OWN_ENV = [e for _, e in UPSTREAM_BOOLS] + [
    "DCGM_EXPORTER_LISTEN", "DCGM_EXPORTER_WEB_CONFIG_FILE", "DCGM_EXPORTER_DEVICES_STR", "DCGM_EXPORTER_COLLECTORS",
    "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "DCGM_POD_RESOURCES_KUBELET_SOCKET", "DCGM_EXPORTER_INTERVAL",
    "DCGM_EXPORTER_OTHER_DEVICES_STR", "DCGM_EXPORTER_CPU_DEVICES_STR", "DCGM_EXPORTER_CONFIGMAP_DATA",
    "DCGM_EXPORTER_CONFIG_FILE", "DCGM_EXPORTER_LOG_FORMAT", "DCGM_EXPORTER_WEB_READ_TIMEOUT",
    "DCGM_EXPORTER_WEB_WRITE_TIMEOUT", "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX", "KUBECONFIG",
    "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT",
    "POD_NAMESPACE", "DCGM_HPC_JOB_MAPPING_DIR"]


def run(args, env=None, timeout=20, address=True):
    """`gpulet exporter ARGS` that is expected to stop at its options: (status, stderr)."""
    e = {k: v for k, v in os.environ.items() if k not in OWN_ENV}
    e.update({"FAKE_NVML_FIXTURE": fixture("single-t4"), "NODE_NAME": "n"})
    e.update(env or {})
    with tempfile.TemporaryDirectory(prefix="gpulet-exp-opts-") as root:
        p = subprocess.run([GPULET, "exporter", "--nvml-library", FAKE, "--root", root]
                           + (["--address", "127.0.0.1:0"] if address else []) + list(args), capture_output=True, text=True, timeout=timeout, env=e)
    return p.returncode, p.stderr


class Bools(unittest.TestCase):
    def test_every_upstream_bool_flag_takes_a_value(self):
        # a bad --collect-interval after the flag: the flag itself was accepted when that is the error
        for name, _ in UPSTREAM_BOOLS:
            for value in ("false", "true"):
                with self.subTest(flag=name, value=value):
                    rc, err = run([f"--{name}={value}", "--collect-interval=abc"])
                    self.assertEqual(rc, 2, err)
                    self.assertIn("--collect-interval 'abc'", err)

    def test_every_upstream_bool_env_takes_false(self):
        for name, env in UPSTREAM_BOOLS:
            with self.subTest(env=env):
                rc, err = run(["--collect-interval=abc"], env={env: "false"})
                self.assertEqual(rc, 2, err)
                self.assertIn("--collect-interval 'abc'", err)

    def hostnames(self, args, env=None):
        ex = Exporter(fixture("single-t4"), ["--kubernetes=false"] + args, env=env)
        try:
            body = ex.wait_for(lambda b: series(b, "DCGM_FI_DEV_GPU_TEMP"), what="a GPU's series")
            return {labels.get("Hostname") for labels, _ in series(body, "DCGM_FI_DEV_GPU_TEMP")}
        finally:
            ex.cleanup()

    def test_no_hostname_false_keeps_the_label(self):
        self.assertEqual(self.hostnames(["--no-hostname=false"]), {"node-a"})
        self.assertEqual(self.hostnames(["--no-hostname=true"]), {None})
        self.assertEqual(self.hostnames(["-n"]), {None})
        self.assertEqual(self.hostnames([], env={"DCGM_EXPORTER_NO_HOSTNAME": "true"}), {None})


class EmptyText(unittest.TestCase):
    def plain_http(self, args, env=None):
        ex = Exporter(fixture("single-t4"), ["--kubernetes=false"] + args, env=env)
        try:
            ex.wait_for(lambda b: series(b, "DCGM_FI_DEV_GPU_TEMP"), what="a GPU's series over plain HTTP")
            self.assertIsNone(ex.proc.poll())
        finally:
            ex.cleanup()

    def test_empty_web_config_is_plain_http(self):
        # exporter-toolkit web/tls_config.go Serve(): an empty config path serves without TLS
        self.plain_http([], env={"DCGM_EXPORTER_WEB_CONFIG_FILE": ""})
        self.plain_http(["--web-config-file="])

    def test_empty_text_is_refused_naming_its_source(self):
        cases = [
            ({"DCGM_EXPORTER_LISTEN": ""}, [], "env DCGM_EXPORTER_LISTEN '' is not valid: give HOST:PORT"),
            ({}, ["--address="], "--address '' is not valid: give HOST:PORT"),
            ({"DCGM_POD_RESOURCES_KUBELET_SOCKET": ""}, [], "env DCGM_POD_RESOURCES_KUBELET_SOCKET '' is not valid"),
            ({}, ["--pod-resources-kubelet-socket="], "--pod-resources-socket '' is not valid"),
            ({"DCGM_EXPORTER_COLLECTORS": ""}, [], "env DCGM_EXPORTER_COLLECTORS '' is not valid"),
            ({}, ["-f", ""], "--collectors '' is not valid"),
        ]
        for env, args, want in cases:
            with self.subTest(env=env, args=args):
                # no --address of run()'s own: it would win over DCGM_EXPORTER_LISTEN
                rc, err = run(args, env=env, address=False)
                self.assertEqual(rc, 2, err)
                self.assertIn(want, err)
                self.assertNotIn("port must be", err)
                self.assertNotIn("cannot open", err)

    def test_a_flag_wins_over_an_empty_env_var(self):
        env = {"DCGM_POD_RESOURCES_KUBELET_SOCKET": "", "DCGM_EXPORTER_DEVICES_STR": "", "DCGM_EXPORTER_LISTEN": "",
               "DCGM_EXPORTER_COLLECTORS": ""}
        rc, err = run(["--pod-resources-socket=/x.sock", "-d", "g", "-f", "/x.csv", "--collect-interval=abc"], env=env)
        self.assertEqual(rc, 2, err)
        self.assertIn("--collect-interval 'abc'", err)


class Typed(unittest.TestCase):
    def test_bad_values_name_their_source(self):
        cases = [
            ({"DCGM_EXPORTER_DEVICES_STR": ""}, [], "env DCGM_EXPORTER_DEVICES_STR '' is not valid: want f, g or i"),
            ({"DCGM_EXPORTER_DEVICES_STR": "x"}, [], "env DCGM_EXPORTER_DEVICES_STR 'x' is not valid"),
            ({"DCGM_EXPORTER_DEVICES_STR": "f:0"}, [], "env DCGM_EXPORTER_DEVICES_STR 'f:0' is not valid"),
            ({"DCGM_EXPORTER_DEVICES_STR": "g:"}, [], "env DCGM_EXPORTER_DEVICES_STR 'g:' is not valid"),
            ({"DCGM_EXPORTER_DEVICES_STR": "g:0:1"}, [], "env DCGM_EXPORTER_DEVICES_STR 'g:0:1' is not valid"),
            ({}, ["--devices="], "--devices '' is not valid"),
            ({}, ["-d", "i:1-"], "--devices 'i:1-' is not valid"),
            ({"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": "bogus"}, [],
             "env DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE 'bogus' is not valid: must be one of uid|device-name"),
            ({"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": ""}, [], "env DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE '' is not valid"),
            ({}, ["--kubernetes-gpu-id-type", "index"], "--kubernetes-gpu-id-type 'index' is not valid"),
        ]
        for env, args, want in cases:
            with self.subTest(env=env, args=args):
                rc, err = run(args, env=env)
                self.assertEqual(rc, 2, err)
                self.assertIn(want, err)

    def test_good_values_start(self):
        # a range is accepted (warned, not applied)
        for env, args in [({"DCGM_EXPORTER_DEVICES_STR": "g:0,2-4"}, []), ({}, ["-d", "i:1,3-5"]),
                          ({"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": "device-name"}, [])]:
            with self.subTest(env=env, args=args):
                rc, err = run(args + ["--collect-interval=abc"], env=env)
                self.assertEqual(rc, 2, err)
                self.assertIn("--collect-interval 'abc'", err)


class Refused(unittest.TestCase):
    """Issue 35 item 6: what gpulet cannot do as dcgm-exporter 4.8.4 does is refused at start (exit 2) naming
    the flag or env var, never accepted with a warning (before: -s, -p, --configmap-data, DRA were warned about
    and the exporter served without them; 4.8's new options were unknown flags)."""

    def test_refused_naming_the_option(self):
        cases = [
            (["-s", "f"], {}, "--switch-devices is not supported"),
            ([], {"DCGM_EXPORTER_OTHER_DEVICES_STR": "g"}, "env DCGM_EXPORTER_OTHER_DEVICES_STR is not supported"),
            (["-p", "f"], {}, "--cpu-devices is not supported"),
            (["--configmap-data", "gpu:metrics"], {}, "--configmap-data is not supported"),
            ([], {"DCGM_EXPORTER_CONFIGMAP_DATA": "gpu:metrics"}, "env DCGM_EXPORTER_CONFIGMAP_DATA is not supported"),
            (["--config-file", "/etc/dcgm-exporter/config.yaml"], {}, "--config-file is not supported"),
            (["--container-labels"], {}, "--container-labels is not supported"),
            (["--web-systemd-socket"], {}, "--web-systemd-socket is not supported"),
            (["--log-format", "json"], {}, "--log-format json is not supported"),
            ([], {"DCGM_EXPORTER_LOG_FORMAT": "json"}, "env DCGM_EXPORTER_LOG_FORMAT json is not supported"),
            (["--web-read-timeout", "5s"], {}, "--web-read-timeout 5s is not supported"),
            ([], {"DCGM_EXPORTER_WEB_WRITE_TIMEOUT": "1m"}, "--web-write-timeout 60s is not supported"),
            (["--kubernetes-pod-label-allowlist-regex", "\\d+"], {}, "RE2 and POSIX read differently"),
            (["--kubernetes-pod-label-allowlist-regex", "app,,team"], {}, "an empty pattern"),
            ([], {"DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX": "(?i)app"}, "(?...) group"),
            (["--kubernetes-pod-label-allowlist-regex", "app("], {}, "allowlist-regex: 'app('"),
            (["--log-format", "xml"], {}, "--log-format 'xml' is not valid"),
            (["--watch-max-keep-samples", "x"], {}, "--watch-max-keep-samples 'x' is not valid"),
            (["--max-concurrent-scrapes", "0"], {}, "--max-concurrent-scrapes '0'"),
        ]
        for args, env, want in cases:
            with self.subTest(args=args, env=env):
                rc, err = run(args, env=env)
                self.assertEqual(rc, 2, err)
                self.assertIn(want, err)

    def test_taken_as_upstream(self):
        """4.8.4's options whose value gpulet holds start the exporter: upstream's defaults given explicitly,
        the switches off, and the options that only matter with one of the refused switches."""
        for args, env in [(["--configmap-data", "none", "--config-file", "", "--log-format", "text",
                            "--web-read-timeout", "10s", "--web-write-timeout", "30s", "--max-concurrent-scrapes",
                            "4", "--container-runtime-socket", "/run/containerd/containerd.sock",
                            "--kubernetes-enable-dra=false", "--dcgm-log-level", "DEBUG"], {}),
                          ([], {"DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX": "",
                                "DCGM_EXPORTER_LOG_FORMAT": "text"}),
                          (["--kubernetes-pod-label-allowlist-regex", "^app$,^app\\.kubernetes\\.io/.*",
                            "--kubernetes-pod-label-allowlist-regex", "tier|env"], {})]:
            with self.subTest(args=args, env=env):
                ex = Exporter(fixture("single-t4"), ["--kubernetes=false"] + args, env=env)
                try:
                    ex.wait_for(lambda b: series(b, "DCGM_FI_DEV_GPU_TEMP"), what="a GPU's series")
                    self.assertNotIn("has no effect", ex.text())
                finally:
                    ex.cleanup()

    def test_warned_once(self):
        """What has no counterpart here and changes no series is taken with one warning each."""
        ex = Exporter(fixture("single-t4"), ["--kubernetes=false", "-r", "localhost:5555", "--watch-max-keep-age",
                                             "5m", "--watch-max-keep-samples", "100", "--enable-pprof",
                                             "--dump-enabled", "--dump-directory", "/tmp/d"])
        try:
            ex.wait_for(lambda b: series(b, "DCGM_FI_DEV_GPU_TEMP"), what="a GPU's series")
            log = ex.text()
            for flag in ("remote-hostengine-info", "watch-max-keep-age", "watch-max-keep-samples", "enable-pprof",
                         "dump-enabled"):
                self.assertEqual(log.count("flag=--%s " % flag), 1, (flag, log))
            self.assertNotIn("flag=--dump-directory", log)
        finally:
            ex.cleanup()

    def test_pod_labels_need_the_api_server(self):
        """With -k, pod labels or UIDs need the pods watch: no API server to talk to (no --kubeconfig or
        KUBECONFIG, not in a pod), a kubeconfig that is not there or no NODE_NAME ends the exporter naming
        why; without -k they are off, as upstream."""
        for args, env, want in ((["--kubernetes-enable-pod-labels"], {}, "no Kubernetes API server"),
                                (["--kubernetes-enable-pod-uid"], {"NODE_NAME": ""}, "NODE_NAME is not set"),
                                # the kubeconfig reaches the API client from the flag and from $KUBECONFIG
                                (["--kubernetes-enable-pod-labels", "--kubeconfig", "/nonexistent/kc"], {},
                                 "/nonexistent/kc"),
                                (["--kubernetes-enable-pod-uid"], {"KUBECONFIG": "/nonexistent/env-kc"},
                                 "/nonexistent/env-kc")):
            with self.subTest(args=args):
                e = {k: v for k, v in os.environ.items() if k not in OWN_ENV}
                e.update({"FAKE_NVML_FIXTURE": fixture("single-t4"), "NODE_NAME": "n"})
                e.update(env)
                with tempfile.TemporaryDirectory() as root:
                    p = subprocess.run([GPULET, "exporter", "--nvml-library", FAKE, "--root", root, "--address",
                                        "127.0.0.1:0", "--kubernetes"] + args, capture_output=True, text=True,
                                       timeout=20, env=e)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn("cannot watch this node's pods", p.stderr)
                self.assertIn(want, p.stderr)
        ex = Exporter(fixture("single-t4"), ["--kubernetes=false", "--kubernetes-enable-pod-labels",
                                             "--kubernetes-enable-pod-uid"])
        try:
            ex.wait_for(lambda b: series(b, "DCGM_FI_DEV_GPU_TEMP"), what="a GPU's series")
            self.assertNotIn("pods", ex.text())
        finally:
            ex.cleanup()


class Health48(unittest.TestCase):
    def test_exporter_metrics(self):
        """--enable-exporter-metrics: client_golang's process_* and promhttp_* families (no go_*: no Go
        runtime); off by default, as upstream 4.8.4."""
        ex = Exporter(fixture("single-t4"), ["--kubernetes=false", "--enable-exporter-metrics"])
        try:
            body = ex.wait_for(lambda b: series(b, "DCGM_FI_DEV_GPU_TEMP"), what="a GPU's series")
            body = ex.scrape()
            for name in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
                         "process_max_fds", "process_start_time_seconds", "process_virtual_memory_bytes"):
                self.assertTrue(series(body, name), name)
            done = {l["code"]: v for l, v in series(body, "promhttp_metric_handler_requests_total")}
            self.assertGreaterEqual(done["200"], 1)
            self.assertEqual(done["500"], 0)
            self.assertGreater(series(body, "process_resident_memory_bytes")[0][1], 1 << 20)
            self.assertFalse([l for l in body.splitlines() if l.startswith("go_")])
            again = {l["code"]: v for l, v in series(ex.scrape(), "promhttp_metric_handler_requests_total")}
            self.assertEqual(again["200"], done["200"] + 1)
        finally:
            ex.cleanup()
        ex = Exporter(fixture("single-t4"), ["--kubernetes=false"])
        try:
            body = ex.wait_for(lambda b: series(b, "DCGM_FI_DEV_GPU_TEMP"), what="a GPU's series")
            self.assertNotIn("process_cpu_seconds_total", body)
            self.assertNotIn("promhttp_", body)
        finally:
            ex.cleanup()

    def test_health_require_gpus(self):
        """--health-require-gpus: /health is 503 while NVML shows no GPU (a liveness probe restarts it)."""
        for args, want in (([], 200), (["--health-require-gpus"], 503)):
            ex = Exporter(fixture("no-gpu"), ["--kubernetes=false"] + args)
            try:
                ex.wait_for(lambda b: "gpulet_exporter_ready 1" in b, what="ready")
                for path in ("/health", "/healthz"):
                    status, _, body = ex.get(path)
                    self.assertEqual(status, want, (args, path, body))
            finally:
                ex.cleanup()
        ex = Exporter(fixture("single-t4"), ["--kubernetes=false", "--health-require-gpus"])
        try:
            ex.wait_for(lambda b: "gpulet_exporter_ready 1" in b, what="ready")
            self.assertEqual(ex.get("/health")[0], 200)
        finally:
            ex.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
