#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A real Prometheus server (Debian's, loopback only, 1 s scrape and rule interval) scrapes gpulet's
exporter on fake-NVML fixtures (issue 14 points 5, 6 and the ServiceMonitor of point 6):
- every panel query of deploy/grafana-dashboard.json returns data on the fixtures that support it;
  panels whose metric does not exist on this branch yet are listed in PENDING with the reason, and
  the test fails as soon as their metric appears (turn the panel on then);
- the ServiceMonitor of the Helm chart (rendered by real helm), applied the way the Prometheus Operator applies it, keeps
  unattributed GPUs out of the exporter's namespace (and the old honorLabels: true did not), and gives
  the attributed ones exported_pod/exported_namespace/exported_container too (dcgm-exporter's chart's names);
- the shipped rules on the `degraded` fixture: the DBE and row-remap alerts fire from NVML's current
  state and keep firing (same activeAt) across an exporter restart; after a GPU reset health is back.
Run by CTest (exporter_prometheus)."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helm_lib  # noqa: E402
from exporter_lib import SRC, Exporter, PodResources, fixture, series, write_json_atomic  # noqa: E402

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
DASHBOARD = os.path.join(SRC, "deploy", "grafana-dashboard.json")

# Panels whose metric is not served yet: title -> (metric, why, fixture that will have it). None today.
PENDING = {}
# Every other panel: the fixtures (exporters below) on which it must have data.
ALL = ("dgx-a100", "dgx-h100", "degraded")
EXPECT = {
    "GPU temperature": ALL, "Average GPU temperature": ALL, "GPU power draw": ALL, "Total GPU power": ALL,
    "SM clock": ALL, "GPU utilization": ALL, "Framebuffer memory used": ALL, "Memory copy utilization": ALL,
    "GPU memory used by namespace": ("dgx-a100",), "GPUs held by pods": ("dgx-a100",), "Unhealthy GPUs": ALL,
    "GPU health conditions now": ("degraded",), "Double-bit ECC errors since reset": ALL,
    "XID errors in the last hour": ("dgx-a100",), "Sample age": ALL,
    "Tensor Core utilization": ("dgx-h100",),  # GPM: Hopper and newer
    "GPU nodes by root cause": ("doctor",),  # the doctor DaemonSet's metrics, on a node without a driver
}


def free_port():
    """A loopback port nobody listens on now (Prometheus and a restarted exporter need a fixed one)."""
    with socket.create_server(("127.0.0.1", 0)) as s:
        return s.getsockname()[1]


def pods_for(doc):
    """A whole GPU and a MIG instance held by pods; every other GPU is unattributed."""
    return [
        {"name": "train-0", "namespace": "ml", "containers": [
            {"name": "worker", "devices": [{"resource_name": "nvidia.com/gpu",
                                            "device_ids": [doc["gpus"][0]["uuid"]]}]}]},
        {"name": "infer-a", "namespace": "web", "containers": [
            {"name": "srv", "devices": [{"resource_name": "nvidia.com/mig-3g.20gb",
                                         "device_ids": [doc["gpus"][6]["mig"][0]["cis"][0]["uuid"]]}]}]},
    ]


def servicemonitor_endpoint():
    """The exporter's ServiceMonitor endpoint as the shipped Helm chart renders it (real helm)."""
    docs = helm_lib.template(values={"metrics": {"serviceMonitor": {"enabled": True}}})
    return helm_lib.find(docs, "ServiceMonitor", "exporter")["spec"]["endpoints"][0]


def operator_job(name, endpoint, target):
    """A scrape job as the Prometheus Operator makes one from a ServiceMonitor endpoint: the target
    carries the exporter pod's own namespace/pod/container (the Operator's target labels), then the
    endpoint's relabelings, and honor_labels from honorLabels."""
    def configs(rules):
        return [{{"sourceLabels": "source_labels", "targetLabel": "target_label"}.get(k, k):
                 (v.lower() if k == "action" else v) for k, v in r.items()} for r in rules]
    return {"job_name": name, "honor_labels": bool(endpoint.get("honorLabels", False)),
            "static_configs": [{"targets": [target],
                                "labels": {"namespace": "gpulet", "pod": "gpulet-exporter-x7k2p",
                                           "container": "exporter", "service": "gpulet-exporter"}}],
            "relabel_configs": configs(endpoint.get("relabelings", [])),
            "metric_relabel_configs": configs(endpoint.get("metricRelabelings", []))}


class Prometheus:
    def __init__(self, jobs, rules=None):
        self.dir = tempfile.mkdtemp(prefix="gpulet-prom-")
        self.port = free_port()
        cfg = {"global": {"scrape_interval": "1s", "scrape_timeout": "900ms", "evaluation_interval": "1s"},
               "scrape_configs": jobs}
        if rules:
            cfg["rule_files"] = [rules]
        path = os.path.join(self.dir, "prometheus.yml")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen([PROMETHEUS, "--config.file=" + path, "--storage.tsdb.path=" + self.dir + "/data",
                                      "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.port, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError("prometheus did not start:\n" + open(self.log.name).read())

    def api(self, path, **params):
        url = "http://127.0.0.1:%d/api/v1/%s?%s" % (self.port, path, urllib.parse.urlencode(params))
        with urllib.request.urlopen(url, timeout=10) as r:
            doc = json.load(r)
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, expr):
        return self.api("query", query=expr)["result"]

    def wait(self, pred, what, timeout=60):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            last = pred()
            if last:
                return last
            time.sleep(0.5)
        raise AssertionError("timed out waiting for " + what)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def panel_exprs(dash):
    for p in dash["panels"]:
        for t in p.get("targets", []):
            yield p["title"], t["expr"]


def grafana_expand(expr, instance_re):
    """The dashboard's variables as Grafana would fill them for one node and all GPUs."""
    return expr.replace("$instance", instance_re).replace("$gpu", ".*")


class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DASHBOARD) as f:
            cls.dash = json.load(f)
        with open(fixture("dgx-a100")) as f:
            cls.doc = json.load(f)
        cls.root = tempfile.mkdtemp(prefix="gpulet-root-")
        cls.pr = PodResources(os.path.join(cls.root, "var/lib/kubelet/pod-resources/kubelet.sock"), pods_for(cls.doc))
        cls.ex = {}
        cls.sm = None
        try:
            args = ["--collect-interval", "500", "--pod-resources-interval", "500", "--kubernetes"]
            cls.ex["dgx-a100"] = Exporter(fixture("dgx-a100"), args, root=cls.root)
            for name in ("dgx-h100", "degraded"):
                cls.ex[name] = Exporter(fixture(name), args + ["--kubernetes=false"])
            # scraped only through the ServiceMonitor jobs, so the dashboard's instances stay one job each
            cls.sm = Exporter(fixture("dgx-a100"), args, root=cls.root)
            a100 = cls.ex["dgx-a100"]
            a100.wait_for(lambda b: "gpulet_pod_gpu_allocated{" in b, what="attribution")
            for _ in range(100):  # the event thread registers the GPUs, then an XID is seen
                if "Watching NVML events" in a100.text():
                    break
                time.sleep(0.1)
            a100.add_event("xid 3 31")
            a100.wait_for(lambda b: "gpulet_xid_errors_total{" in b, what="XID counted")
            endpoint = servicemonitor_endpoint()
            old = dict(endpoint, honorLabels=True)
            old.pop("relabelings", None)
            old.pop("metricRelabelings", None)
            cls.sm.wait_for(lambda b: "gpulet_pod_gpu_allocated{" in b, what="attribution")
            target = "127.0.0.1:%d" % cls.sm.port
            jobs = [{"job_name": "gpulet-exporter", "static_configs": [
                {"targets": ["127.0.0.1:%d" % e.port], "labels": {"fixture": n}} for n, e in cls.ex.items()]},
                operator_job("servicemonitor", endpoint, target),
                operator_job("servicemonitor-before-issue14", old, target)]
            # the doctor DaemonSet's container on a node root where no driver is loaded
            cls.doctor_root = tempfile.mkdtemp(prefix="gpulet-doctor-root-")
            cls.doctor_addr = "127.0.0.1:%d" % free_port()
            cls.doctor = subprocess.Popen([os.environ.get("GPULET", os.path.join(SRC, "build", "gpulet")), "doctor",
                                           "--root", cls.doctor_root, "--serve-metrics", cls.doctor_addr,
                                           "--node-name", "gpu-node-1"], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)
            jobs[0]["static_configs"].append({"targets": [cls.doctor_addr], "labels": {"fixture": "doctor"}})
            cls.prom = Prometheus(jobs)
            targets = len(cls.ex) + 3
            cls.prom.wait(lambda: len(cls.prom.query('up == 1')) == targets, "every target up")
            time.sleep(3)  # a few samples per series, for increase() and the *_over_time panels
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "prom", None):
            cls.prom.stop()
        for e in list(cls.ex.values()) + ([cls.sm] if getattr(cls, "sm", None) else []):
            e.cleanup()
        cls.pr.stop()
        if getattr(cls, "doctor", None):
            cls.doctor.kill()
            cls.doctor.wait()
            shutil.rmtree(cls.doctor_root, ignore_errors=True)
        shutil.rmtree(cls.root, ignore_errors=True)

    def instance(self, name):
        return self.doctor_addr if name == "doctor" else "127.0.0.1:%d" % self.ex[name].port

    def test_every_panel_has_data_or_is_pending(self):
        titles = [p["title"] for p in self.dash["panels"]]
        self.assertEqual(sorted(titles), sorted(list(EXPECT) + list(PENDING)), "a panel without expectations")
        report = []
        for title, expr in panel_exprs(self.dash):
            if title in PENDING:
                metric, why, fx = PENDING[title]
                got = self.prom.query('count({__name__="%s"})' % metric)
                self.assertEqual(got, [], "pending panel %r now has its metric %s: move it to EXPECT with %s"
                                 % (title, metric, fx))
                report.append("%-34s pending: %s" % (title, why))
                continue
            counts = []
            for fx in EXPECT[title]:
                res = self.prom.query(grafana_expand(expr, self.instance(fx)))
                self.assertTrue(res, "panel %r has no data on %s: %s" % (title, fx, grafana_expand(expr, ".*")))
                counts.append("%s=%d" % (fx, len(res)))
            report.append("%-34s %s" % (title, " ".join(counts)))
        print("\n".join(report))

    def test_xid_panel_counts_the_first_xid(self):
        """One XID 31 on GPU 3: the table says 1 (increase() alone reads a counter series born at 1 as 0)."""
        expr = dict(panel_exprs(self.dash))["XID errors in the last hour"]
        res = self.prom.query(grafana_expand(expr, self.instance("dgx-a100")))
        self.assertEqual([(r["metric"]["gpu"], r["metric"]["xid"], r["value"][1]) for r in res], [("3", "31", "1")])

    def test_template_variables(self):
        # label_values(DCGM_FI_DEV_GPU_TEMP, instance) lists every node; gpu lists the GPUs of one
        inst = {r["metric"]["instance"] for r in self.prom.query(
            'count by (instance) (DCGM_FI_DEV_GPU_TEMP{job="gpulet-exporter"})')}
        self.assertEqual(inst, {self.instance(n) for n in self.ex})
        gpus = {r["metric"]["gpu"] for r in self.prom.query(
            'count by (gpu) (DCGM_FI_DEV_GPU_TEMP{job="gpulet-exporter", instance=~"%s"})' % self.instance("dgx-a100"))}
        self.assertEqual(gpus, {str(i) for i in range(8)})

    def test_servicemonitor_keeps_unattributed_gpus_out_of_the_exporter_namespace(self):
        def ns_of(job):
            return {(r["metric"]["gpu"], r["metric"].get("GPU_I_ID", ""), r["metric"].get("namespace", ""))
                    for r in self.prom.query('DCGM_FI_DEV_FB_USED{job="%s"}' % job)}
        got = ns_of("servicemonitor")
        self.assertTrue(got)
        self.assertIn(("0", "", "ml"), got)  # attributed: the pod's namespace, not exported_namespace
        self.assertIn(("6", str(self.doc["gpus"][6]["mig"][0]["gi"]), "web"), got)
        self.assertEqual({n for _, _, n in got}, {"ml", "web", ""})  # the others have no namespace at all
        # dcgm-exporter's chart's names too (issue 24): the same values under exported_*, for its users' queries
        for r in self.prom.query('DCGM_FI_DEV_FB_USED{job="servicemonitor"}'):
            m = r["metric"]
            for k in ("pod", "namespace", "container"):
                self.assertEqual(m.get("exported_" + k), m.get(k), m)
        self.assertEqual(len(self.prom.query('DCGM_FI_DEV_FB_USED{job="servicemonitor", exported_namespace="ml"}')),
                         len(self.prom.query('DCGM_FI_DEV_FB_USED{job="servicemonitor", namespace="ml"}')))
        self.assertTrue(self.prom.query('DCGM_FI_DEV_FB_USED{job="servicemonitor", exported_pod!=""}'))
        # the ServiceMonitor before issue 14 (honorLabels: true, no relabeling) filed them under "gpulet"
        self.assertIn("gpulet", {n for _, _, n in ns_of("servicemonitor-before-issue14")})


class Alerts(unittest.TestCase):
    def test_degraded_alerts_hold_across_an_exporter_restart(self):
        tmp = tempfile.mkdtemp(prefix="gpulet-rules-")
        rules = os.path.join(tmp, "rules.yaml")
        with open(os.path.join(SRC, "deploy", "prometheus-rules.yaml")) as f:
            spec = yaml.safe_load(f)["spec"]
        with open(rules, "w") as f:
            yaml.safe_dump(spec, f)
        port = free_port()
        args = ["--collect-interval", "300", "--kubernetes=false", "--address", "127.0.0.1:%d" % port]
        ex = Exporter(fixture("degraded"), args)
        prom = None
        try:
            with open(ex.fixture) as f:
                doc = json.load(f)
            bad = doc["gpus"][1]["uuid"]
            body = ex.wait_for(lambda b: len(series(b, "gpulet_gpu_health_condition")) >= 6, what="health read")
            healthy = {l["gpu"]: v for l, v in series(body, "gpulet_gpu_healthy") if "GPU_I_ID" not in l}
            self.assertEqual(healthy, {"0": 1, "1": 0, "2": 0})  # GPU 2 is lost
            conds = {(l["gpu"], l["condition"]): v for l, v in series(body, "gpulet_gpu_health_condition")}
            self.assertEqual(conds[("1", "dbe_volatile")], 1)
            self.assertEqual(conds[("1", "row_remap_pending")], 1)
            self.assertEqual(conds[("0", "row_remap_pending")], 0)

            prom = Prometheus([{"job_name": "gpulet-exporter",
                                "static_configs": [{"targets": ["127.0.0.1:%d" % port]}]}], rules)

            def firing():
                return {(a["labels"]["alertname"], a["labels"].get("UUID", "")): a["activeAt"]
                        for a in prom.api("alerts")["alerts"] if a["state"] == "firing"}
            want = {("GpuEccDoubleBitError", bad), ("GpuRowRemapPending", bad)}
            before = prom.wait(lambda: (lambda f: f if want <= set(f) else None)(firing()), "DBE and remap alerts")
            self.assertNotIn(("GpuXidError", bad), before)

            # restart the exporter on the same address: no XID alert, health read again from NVML
            ex.stop()
            time.sleep(2)
            fx = ex.fixture
            ex2 = Exporter(fx, args)
            try:
                body = ex2.wait_for(lambda b: len(series(b, "gpulet_gpu_health_condition")) >= 6, what="health read")
                self.assertEqual([v for l, v in series(body, "gpulet_gpu_healthy") if l.get("UUID") == bad], [0])
                time.sleep(4)
                after = firing()
                for k in want:  # never resolved: the same alert, active since before the restart
                    self.assertEqual(after.get(k), before[k], k)
                self.assertFalse([k for k in after if k[0] == "GpuXidError"], after)
                # the GPU is reset: the conditions clear and the GPU is healthy again
                doc["gpus"][1]["telemetry"]["ecc"]["dbe_volatile"] = 0
                doc["gpus"][1]["telemetry"]["remapped_rows"]["pending"] = False
                write_json_atomic(ex2.fixture, doc)
                body = ex2.wait_for(lambda b: [v for l, v in series(b, "gpulet_gpu_healthy")
                                               if l.get("UUID") == bad] == [1], what="healthy after reset")
                self.assertEqual([v for l, v in series(body, "gpulet_gpu_health_condition") if l.get("UUID") == bad],
                                 [0, 0, 0])
            finally:
                ex2.cleanup()
        finally:
            if prom:
                prom.stop()
            ex.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
