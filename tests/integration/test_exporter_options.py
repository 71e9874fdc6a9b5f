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
# Names of dcgm-exporter's env vars, cleared so the caller's environment cannot steer a test.
OWN_ENV = [e for _, e in UPSTREAM_BOOLS] + [
    "DCGM_EXPORTER_LISTEN", "DCGM_EXPORTER_WEB_CONFIG_FILE", "DCGM_EXPORTER_DEVICES_STR", "DCGM_EXPORTER_COLLECTORS",
    "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "DCGM_POD_RESOURCES_KUBELET_SOCKET", "DCGM_EXPORTER_INTERVAL",
    "DCGM_HPC_JOB_MAPPING_DIR"]


def run(args, env=None, timeout=20, address=True):
    """`gpulet exporter ARGS` that is expected to stop at its options: (status, stderr)."""
    e = {k: v for k, v in os.environ.items() if k not in OWN_ENV}
    e.update({"FAKE_NVML_FIXTURE": fixture("single-t4"), "NODE_NAME": "n"})
    e.update(env or {})
    with tempfile.TemporaryDirectory(prefix="gpulet-exp-opts-") as root:
        p = subprocess.run([GPULET, "exporter", "--nvml-library", FAKE, "--root", root]
                           + (["--address", "127.0.0.1:0"] if address else []) + list(args), capture_output=True, text=True, timeout=timeout, env=e)
    return p.returncode, p.stderr


# dcgm-exporter options whose series gpulet does not have yet, with the GPU Operator's ClusterPolicy
# setting that sets each (gpu-operator controllers/object_controls.go TransformDCGMExporter; docs/reference/
# operator.md §4): refused at start naming both, never accepted with only a warning.
REFUSED = [
    ("--kubernetes-enable-pod-labels", "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", "true", "dcgmExporter.enablePodLabels"),
    ("--kubernetes-enable-pod-uid", "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", "true", "dcgmExporter.enablePodUID"),
    ("--hpc-job-mapping-dir", "DCGM_HPC_JOB_MAPPING_DIR", "/var/lib/dcgm-exporter/job-mapping",
     "dcgmExporter.hpcJobMapping"),
]


class Refused(unittest.TestCase):
    def test_unserved_options_are_refused_naming_the_setting(self):
        for flag, env, value, setting in REFUSED:
            for args, envs in (([f"{flag}={value}"], None), ([], {env: value})):
                with self.subTest(args=args, env=envs):
                    rc, err = run(args, env=envs)
                    self.assertEqual(rc, 2, err)
                    self.assertIn(f"{flag} (env {env}) is not supported yet", err)
                    self.assertIn("GPU Operator ClusterPolicy " + setting, err)

    def test_off_is_not_refused(self):
        # false or "" (the Operator leaves them unset; a chart may write false) gets past the options: the
        # collectors file, read at start, is the first thing that fails
        rc, err = run(["--kubernetes-enable-pod-labels=false", "--kubernetes-enable-pod-uid=false",
                       "-f", "/nonexistent/c.csv"], env={"DCGM_HPC_JOB_MAPPING_DIR": ""})
        self.assertEqual(rc, 1, err)
        self.assertIn("collectors file", err)
        self.assertNotIn("not supported", err)


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


if __name__ == "__main__":
    unittest.main(verbosity=2)
