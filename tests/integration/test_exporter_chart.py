# SPDX-License-Identifier: Apache-2.0
"""The chart's collectors CSV (issue 24 item 6): exporter.collectors becomes a ConfigMap, mounted
read-only and passed with -f; the file the chart renders starts the exporter and serves its fields."""
import os
import shutil
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helm_lib  # noqa: E402
from exporter_lib import Exporter, fixture, series  # noqa: E402

CSV = ("# a user's list\n"
       "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
       "DCGM_FI_DEV_POWER_VIOLATION, counter, Throttling duration due to power constraints (in ns).\n"
       "DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.\n")


def render(values):
    helm, _ = helm_lib.fetch()
    d = tempfile.mkdtemp(prefix="gpulet-chart-")
    try:
        vf = os.path.join(d, "values.yaml")
        with open(vf, "w") as f:
            yaml.safe_dump(values, f)
        p = helm_lib.run([helm, "template", "t", helm_lib.CHART, "--values", vf])
        assert p.returncode == 0, p.stderr
        return [o for o in yaml.safe_load_all(p.stdout) if o]
    finally:
        shutil.rmtree(d, ignore_errors=True)


class Collectors(unittest.TestCase):
    def test_default_passes_no_file(self):
        objs = render({})
        ds = next(o for o in objs if o["kind"] == "DaemonSet" and o["metadata"]["name"].endswith("-exporter"))
        args = ds["spec"]["template"]["spec"]["containers"][0]["args"]
        self.assertFalse([a for a in args if a.startswith("--collectors")])
        self.assertIn("--kubernetes=true", args)  # set explicitly: the binary's default is off, as upstream
        self.assertFalse([o for o in objs if o["kind"] == "ConfigMap" and "collectors" in o["metadata"]["name"]])

    def test_collectors_configmap_mounted_and_served(self):
        objs = render({"exporter": {"collectors": CSV}})
        cm = next(o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "t-gpulet-exporter-collectors")
        self.assertEqual(cm["data"]["counters.csv"], CSV.rstrip("\n"))
        ds = next(o for o in objs if o["kind"] == "DaemonSet" and o["metadata"]["name"].endswith("-exporter"))
        pod = ds["spec"]["template"]["spec"]
        c = pod["containers"][0]
        self.assertIn("--collectors=/etc/gpulet/collectors/counters.csv", c["args"])
        mount = next(m for m in c["volumeMounts"] if m["name"] == "collectors")
        self.assertEqual((mount["mountPath"], mount["readOnly"]), ("/etc/gpulet/collectors", True))
        vol = next(v for v in pod["volumes"] if v["name"] == "collectors")
        self.assertEqual(vol["configMap"]["name"], cm["metadata"]["name"])
        # the rendered file as the exporter reads it
        d = tempfile.mkdtemp(prefix="gpulet-csv-")
        path = os.path.join(d, "counters.csv")
        with open(path, "w") as f:
            f.write(cm["data"]["counters.csv"])
        ex = Exporter(fixture("dgx-h100"), ["--collect-interval", "200", "--kubernetes=false", "-f", path])
        try:
            body = ex.wait_for(lambda b: "DCGM_FI_DEV_GPU_TEMP{" in b, what="first sample")
            self.assertEqual(len(series(body, "DCGM_FI_DEV_XID_ERRORS")), 8)
            self.assertNotIn("DCGM_FI_DEV_POWER_USAGE{", body)
        finally:
            ex.cleanup()
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
