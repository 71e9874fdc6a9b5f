#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Black-box tests of `gpulet labels`: golden files per fixture and MIG strategy (tests/golden/labels,
regenerate with --update and review the diff against device-plugin.md §9), the NFD feature file
written atomically under --root, GFD's env vars, relabeling and removal on SIGTERM."""
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exporter_lib import FAKE, FIXTURES, GPULET, SRC, fixture  # noqa: E402

GOLDEN = os.path.join(SRC, "tests", "golden", "labels")
UPDATE = "--update" in sys.argv
FEATURE = "etc/kubernetes/node-feature-discovery/features.d/gfd"
# fixture, golden name, extra args
CASES = [(f[:-5], s, ["--mig-strategy", s]) for f in sorted(os.listdir(FIXTURES))
         if f.endswith(".json") and not f.endswith(".schema.json")
         for s in ("none", "single", "mixed")]
CASES += [("dgx-h100", "time-slicing", ["--sharing-strategy", "time-slicing", "--replicas", "4"]),
          ("dgx-h100", "time-slicing-renamed", ["--sharing-strategy", "time-slicing", "--replicas", "4",
                                                "--rename-by-default"]),
          ("dgx-a100", "custom", ["--mig-strategy", "mixed", "--gpu-type", "auto", "--gpu-mig-label"])]


def uniform_mig_fixture(dest):
    """mixed.json without its T4: one A100 with 7x 1g.5gb, the layout MIG "single" accepts."""
    import json
    doc = json.loads(read(fixture("mixed")))
    doc["gpus"] = doc["gpus"][1:]
    doc["topology"] = {"pcie": [[0]]}
    with open(dest, "w") as f:
        json.dump(doc, f)
    return dest


def wait_until(pred, seconds):
    """Poll pred every 50 ms for up to `seconds`; the caller asserts what it waited for."""
    deadline = time.time() + seconds
    while time.time() < deadline and not pred():
        time.sleep(0.05)


def read(path):
    with open(path) as f:
        return f.read()


def run(args, fixture_name, root, env=None, **kw):
    path = fixture_name if fixture_name.startswith("/") else fixture(fixture_name)
    e = dict(os.environ, FAKE_NVML_FIXTURE=path)
    e.update(env or {})
    return subprocess.run([GPULET, "labels", "--nvml-library", FAKE, "--root", root] + args, env=e,
                          capture_output=True, text=True, **kw)


class Golden(unittest.TestCase):
    def test_golden(self):
        root = tempfile.mkdtemp()
        uniform = uniform_mig_fixture(os.path.join(root, "a100-mig-uniform.json"))
        cases = CASES + [("a100-mig-uniform", s, ["--mig-strategy", s]) for s in ("single", "mixed")]
        try:
            for fx, name, args in cases:
                with self.subTest(fixture=fx, case=name):
                    p = run(["--oneshot", "--no-timestamp", "--output-file", "-"] + args,
                            uniform if fx == "a100-mig-uniform" else fx, root)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    path = os.path.join(GOLDEN, "%s.%s.txt" % (fx, name))
                    if UPDATE:
                        with open(path, "w") as f:
                            f.write(p.stdout)
                    with open(path) as f:
                        self.assertEqual(p.stdout, f.read(), "labels of %s %s changed (see %s)" % (fx, name, path))
        finally:
            shutil.rmtree(root)


class FeatureFile(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.out = os.path.join(self.root, FEATURE)
        os.makedirs(os.path.dirname(self.out))
        os.makedirs(os.path.join(self.root, "sys/class/dmi/id"))
        with open(os.path.join(self.root, "sys/class/dmi/id/product_name"), "w") as f:
            f.write("DGX A100\n")

    def tearDown(self):
        shutil.rmtree(self.root)

    def test_oneshot_writes_default_path(self):
        p = run(["--oneshot"], "single-t4", self.root)
        self.assertEqual(p.returncode, 0, p.stderr)
        st = os.stat(self.out)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o644)
        text = read(self.out)
        self.assertIn("nvidia.com/gpu.product=Tesla-T4\n", text)
        self.assertIn("nvidia.com/gpu.machine=DGX-A100\n", text)
        self.assertRegex(text, r"\nnvidia.com/gfd.timestamp=\d{10}\n")
        self.assertEqual(os.listdir(os.path.dirname(self.out)), ["gfd"])  # no temp file left
        for line in text.splitlines():  # NFD format: comments or <ns>/<name>=<value>
            self.assertRegex(line, r"^(#.*|[a-z0-9.-]+/[A-Za-z0-9._-]+=[A-Za-z0-9._-]*)$")
        self.assertLess(len(text), 65536)  # NFD ignores larger files

    def test_gfd_env_vars(self):
        out = os.path.join(self.root, "custom")
        p = run([], "dgx-a100", self.root, env={"GFD_ONESHOT": "true", "GFD_NO_TIMESTAMP": "true",
                                                 "GFD_OUTPUT_FILE": "/custom", "MIG_STRATEGY": "mixed"})
        self.assertEqual(p.returncode, 0, p.stderr)
        text = read(out)
        self.assertIn("nvidia.com/mig.strategy=mixed\n", text)
        self.assertNotIn("gfd.timestamp", text)
        self.assertFalse(os.path.exists(self.out))

    def test_refuses_symlink(self):
        os.symlink("/etc/passwd", self.out)
        p = run(["--oneshot"], "single-t4", self.root)
        self.assertEqual(p.returncode, 1)
        self.assertTrue(os.path.islink(self.out))

    def test_usage_errors(self):
        for args in (["--mig-strategy", "bogus"], ["--sleep-interval", "soon"], ["--sharing-strategy", "mps"]):
            p = run(args, "single-t4", self.root)
            self.assertEqual(p.returncode, 2, args)

    def test_nvml_failure(self):
        p = subprocess.run([GPULET, "labels", "--oneshot", "--nvml-library", "/nonexistent.so", "--root", self.root],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertFalse(os.path.exists(self.out))
        # --fail-on-init-error=false: label what can be labelled and carry on
        p = subprocess.run([GPULET, "labels", "--oneshot", "--fail-on-init-error=false", "--nvml-library",
                            "/nonexistent.so", "--root", self.root], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("gfd.timestamp", read(self.out))

    def test_daemon_labels_once_the_driver_appears(self):
        """--fail-on-init-error=false without NVML: says no GPU labels are written and looks again at each
        relabelling, so the GPU labels appear once the driver does (here: the library path comes to exist)."""
        lib = os.path.join(self.root, "late", "libnvidia-ml.so.1")
        e = dict(os.environ, FAKE_NVML_FIXTURE=fixture("single-t4"))
        proc = subprocess.Popen([GPULET, "labels", "--sleep-interval", "200ms", "--fail-on-init-error=false",
                                 "--nvml-library", lib, "--root", self.root], env=e, stderr=subprocess.PIPE,
                                text=True)
        try:
            wait_until(lambda: os.path.exists(self.out), 5)
            self.assertIn("gfd.timestamp", read(self.out))
            self.assertNotIn("gpu.count", read(self.out))
            os.makedirs(os.path.dirname(lib))
            os.symlink(FAKE, lib)
            wait_until(lambda: "gpu.count=1\n" in read(self.out), 10)
            self.assertIn("nvidia.com/gpu.count=1\n", read(self.out))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
        log = proc.stderr.read()
        self.assertIn("no GPU labels are written (only the timestamp); trying again", log)
        self.assertIn("NVML loaded, labelling the GPUs", log)

    def test_daemon_relabels_and_removes_on_stop(self):
        tmpfx = os.path.join(self.root, "fx.json")
        shutil.copy(fixture("dgx-h100"), tmpfx)
        e = dict(os.environ, FAKE_NVML_FIXTURE=tmpfx)
        proc = subprocess.Popen([GPULET, "labels", "--sleep-interval", "200ms", "--no-timestamp", "--nvml-library",
                                 FAKE, "--root", self.root], env=e, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: os.path.exists(self.out), 5)
            self.assertIn("nvidia.com/gpu.count=8\n", read(self.out))
            import json
            doc = json.loads(read(tmpfx))
            del doc["gpus"][7]
            with open(tmpfx + ".new", "w") as f:
                json.dump(doc, f)
            os.replace(tmpfx + ".new", tmpfx)
            wait_until(lambda: "gpu.count=7\n" in read(self.out), 10)
            self.assertIn("nvidia.com/gpu.count=7\n", read(self.out))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
        self.assertEqual(proc.returncode, 0, proc.stderr.read())
        self.assertFalse(os.path.exists(self.out))


if __name__ == "__main__":
    if UPDATE:
        sys.argv.remove("--update")
    unittest.main(verbosity=2)
