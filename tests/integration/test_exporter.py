#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Black-box tests of `gpulet exporter` on the fake NVML: promtool on live scrapes of every fixture,
pod attribution through a python3-grpcio PodResources server, a hung NVML call on one GPU, XIDs from
NVML events, HTTP limits. Run by CTest (exporter_integration)."""
import copy
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exporter_lib import FIXTURES, PY, SRC, Exporter, PodResources, fixture, series, write_json_atomic  # noqa: E402

ALL_FIXTURES = sorted(f[:-5] for f in os.listdir(FIXTURES) if f.endswith(".json") and not f.endswith(".schema.json"))


def promcheck(body):
    p = subprocess.run([PY, os.path.join(SRC, "tests", "integration", "promcheck.py")], input=body.encode(),
                       capture_output=True)
    return p.returncode, p.stdout.decode() + p.stderr.decode()


def nvml_bad(doc, g):
    """A condition health.c reads from NVML's current state holds on fixture GPU g."""
    t = dict(doc["models"][g["model"]].get("telemetry", {}), **g.get("telemetry", {}))
    rr = t.get("remapped_rows", {})
    return t.get("ecc", {}).get("dbe_volatile", 0) > 0 or bool(rr.get("pending")) or bool(rr.get("failure"))


def load(name):
    with open(fixture(name)) as f:
        return json.load(f)


class Fixtures(unittest.TestCase):
    def test_promtool_on_every_fixture(self):
        self.assertTrue(ALL_FIXTURES)
        for name in ALL_FIXTURES:
            with self.subTest(fixture=name):
                doc = load(name)
                ex = Exporter(fixture(name), ["--collect-interval", "200", "--kubernetes=false"])
                try:
                    body = ex.wait_for(lambda b: "\ngpulet_exporter_ready 1\n" in b and
                                       (not doc["gpus"] or "DCGM_FI_DEV_FB_FREE" in b), what="first sample")
                    rc, out = promcheck(body)
                    self.assertEqual(rc, 0, out)
                    gpus = doc["gpus"]
                    healthy = series(body, "gpulet_gpu_healthy")
                    migs = sum(len(c.get("cis", [])) for g in gpus for c in (g.get("mig") or []))
                    if any(g.get("mig_mode") for g in gpus):
                        self.assertEqual(len(healthy), len(gpus) + migs)
                    ages = series(body, "gpulet_sample_age_seconds")
                    self.assertEqual(len(ages), len(gpus))
                    # a GPU lost before the exporter started cannot even tell its UUID
                    self.assertEqual(sorted(l["UUID"] for l, _ in ages if l.get("UUID")),
                                     sorted(g["uuid"] for g in gpus if not g.get("lost")))
                    # unhealthy: lost, or NVML reports a volatile DBE / pending remap / remap failure now
                    lost = [l["gpu"] for l, v in healthy if v == 0 and "GPU_I_ID" not in l]
                    self.assertEqual(lost, [str(i) for i, g in enumerate(gpus) if g.get("lost") or nvml_bad(doc, g)])
                    for labels, _ in ages:
                        if not labels.get("UUID"):
                            continue
                        self.assertEqual(labels["Hostname"], "node-a")
                        self.assertEqual(labels["DCGM_FI_DRIVER_VERSION"], doc["driver_version"])
                        g = next(g for g in gpus if g["uuid"] == labels["UUID"])
                        self.assertEqual(labels["device"], "nvidia%d" % gpus.index(g))
                        self.assertEqual(labels["pci_bus_id"], g["pci_bus_id"])
                    # telemetry from the fixture shows through, with dcgm units
                    for g in gpus:
                        t = g.get("telemetry", {})
                        if "utilization" in t and not g.get("mig_mode"):
                            util = [v for l, v in series(body, "DCGM_FI_DEV_GPU_UTIL") if l["UUID"] == g["uuid"]
                                    and "GPU_I_ID" not in l]
                            self.assertEqual(util, [t["utilization"]["gpu"]])
                        if "power_mw" in t:
                            p = [v for l, v in series(body, "DCGM_FI_DEV_POWER_USAGE") if l["UUID"] == g["uuid"]]
                            self.assertEqual(p, [t["power_mw"] / 1000.0])
                finally:
                    ex.cleanup()

    def test_mig_labels_like_dcgm(self):
        ex = Exporter(fixture("dgx-a100"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            doc = load("dgx-a100")
            want = sorted((g["uuid"], str(m["gi"]), c["profile_name"]) for g in doc["gpus"]
                          for m in (g.get("mig") or []) for c in m["cis"])
            # every GPU has its own sampler thread: wait until both MIG GPUs have been sampled once
            body = ex.wait_for(lambda b: len([l for l, _ in series(b, "DCGM_FI_DEV_FB_TOTAL") if "GPU_I_ID" in l])
                               >= len(want), what="MIG series of every MIG GPU")
            fb = [l for l, _ in series(body, "DCGM_FI_DEV_FB_TOTAL") if "GPU_I_ID" in l]
            self.assertEqual(sorted((l["UUID"], l["GPU_I_ID"], l["GPU_I_PROFILE"]) for l in fb), want)
        finally:
            ex.cleanup()


class Http(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ex = Exporter(fixture("single-t4"), ["--kubernetes=false"])
        cls.ex.wait_for(lambda b: "\ngpulet_exporter_ready 1\n" in b, what="ready")

    @classmethod
    def tearDownClass(cls):
        cls.ex.cleanup()

    def test_endpoints(self):
        status, headers, body = self.ex.get("/metrics")
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8")
        self.assertEqual(self.ex.get("/healthz")[0], 200)
        self.assertEqual(self.ex.get("/health")[0], 200)
        self.assertEqual(self.ex.get("/nope")[0], 404)
        status, headers, _ = self.ex.get("/metrics", method="POST")
        self.assertEqual(status, 405)
        self.assertIn("GET", headers["Allow"])

    def test_oversized_request_is_refused_and_server_lives(self):
        s = socket.create_connection(("127.0.0.1", self.ex.port), timeout=10)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n")
        reply = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
        except (ConnectionResetError, socket.timeout):
            pass
        s.close()
        self.assertFalse(reply.startswith(b"HTTP/1.1 200"), reply[:100])
        self.assertEqual(self.ex.get("/metrics")[0], 200)

    def test_many_idle_connections_do_not_block_scrapes(self):
        socks = [socket.create_connection(("127.0.0.1", self.ex.port), timeout=5) for _ in range(12)]
        try:
            t0 = time.time()
            self.assertEqual(self.ex.get("/metrics")[0], 200)
            self.assertLess(time.time() - t0, 2.0)
        finally:
            for s in socks:
                s.close()


class NvmlFaults(unittest.TestCase):
    def test_hung_call_on_one_gpu(self):
        """GPU 3 hangs in nvmlDeviceGetUtilizationRates: scrapes stay fast, the others stay fresh,
        GPU 3's sample age grows and, after three missed rounds (+1 s), its last values are no longer
        served (issue 14: they would look current)."""
        ex = Exporter(fixture("dgx-h100"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            ex.wait_for(lambda b: len(series(b, "DCGM_FI_DEV_GPU_UTIL")) == 8, what="8 GPUs sampled")
            doc = load("dgx-h100")
            hung = doc["gpus"][3]["uuid"]
            doc["gpus"][3]["delay_ms"] = {"nvmlDeviceGetUtilizationRates": 30000}
            write_json_atomic(ex.fixture, doc)
            time.sleep(2.5)
            worst = 0.0
            for _ in range(20):
                t0 = time.time()
                body = ex.scrape()
                worst = max(worst, time.time() - t0)
            self.assertLess(worst, 0.5, "a scrape waited on NVML")
            ages = {l["UUID"]: v for l, v in series(body, "gpulet_sample_age_seconds")}
            self.assertGreater(ages[hung], 1.5)
            for uuid, age in ages.items():
                if uuid != hung:
                    self.assertLess(age, 1.5, uuid)
            for name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
                         "DCGM_FI_DEV_FB_USED"):
                uuids = {l["UUID"] for l, _ in series(body, name)}
                self.assertEqual(uuids, {g["uuid"] for g in doc["gpus"]} - {hung}, name)
            # stopping does not wait for the hung call forever
            t0 = time.time()
            self.assertEqual(ex.stop(timeout=15), 0)
            self.assertLess(time.time() - t0, 10)
        finally:
            ex.cleanup()

    def test_gpu_hung_from_the_start_does_not_hold_back_the_probe(self):
        """GPU 3 hangs in its very first round: the fields no GPU gives are still found and listed,
        once its values count as stale (plus 5 s for slow ones)."""
        doc = load("dgx-a100")
        doc["gpus"][3]["delay_ms"] = {"nvmlDeviceGetUtilizationRates": 60000}
        d = tempfile.mkdtemp(prefix="gpulet-hung-")
        write_json_atomic(os.path.join(d, "hung.json"), doc)
        ex = Exporter(os.path.join(d, "hung.json"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            t0 = time.time()
            body = ex.wait_for(lambda b: "needs GPM" in b, timeout=30, what="the late probe")
            self.assertGreater(time.time() - t0, 1.5)  # not before the hung GPU is stale
            self.assertIn("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                          {l["field"] for l, _ in series(body, "gpulet_exporter_field_unavailable")})
            self.assertEqual(ex.text().count("fields not available from NVML on this node"), 1, ex.text())
            self.assertEqual(ex.stop(timeout=15), 0)
        finally:
            ex.cleanup()
            shutil.rmtree(d, ignore_errors=True)

    def test_failing_call_counts_errors_and_keeps_others(self):
        ex = Exporter(fixture("dgx-h100"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            ex.wait_for(lambda b: len(series(b, "DCGM_FI_DEV_GPU_TEMP")) == 8, what="8 GPUs sampled")
            doc = load("dgx-h100")
            bad = doc["gpus"][5]["uuid"]
            doc["gpus"][5]["fail"] = {"nvmlDeviceGetTemperature": "UNKNOWN"}
            write_json_atomic(ex.fixture, doc)
            body = ex.wait_for(lambda b: len(series(b, "DCGM_FI_DEV_GPU_TEMP")) == 7, what="GPU 5 temp gone")
            self.assertNotIn(bad, {l["UUID"] for l, _ in series(body, "DCGM_FI_DEV_GPU_TEMP")})
            errs = {l["UUID"]: v for l, v in series(body, "gpulet_nvml_errors_total")}
            self.assertGreater(errs[bad], 0)
            self.assertEqual(sum(v for u, v in errs.items() if u != bad), 0)
        finally:
            ex.cleanup()

    def test_lost_gpu_is_unhealthy(self):
        ex = Exporter(fixture("dgx-h100"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            ex.wait_for(lambda b: len(series(b, "DCGM_FI_DEV_GPU_TEMP")) == 8, what="8 GPUs sampled")
            doc = load("dgx-h100")
            lost = doc["gpus"][2]["uuid"]
            doc["gpus"][2]["lost"] = True
            write_json_atomic(ex.fixture, doc)
            body = ex.wait_for(lambda b: any(l["UUID"] == lost and v == 0 for l, v in
                                             series(b, "gpulet_gpu_healthy")), what="lost GPU unhealthy")
            self.assertEqual(sum(1 for _, v in series(body, "gpulet_gpu_healthy") if v == 1), 7)
            self.assertIn("GPU is lost", ex.text())
            # a lost GPU serves no last temperature, power, utilisation or memory (issue 14)
            body = ex.scrape()
            for name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
                         "DCGM_FI_DEV_FB_USED"):
                self.assertEqual([l for l, _ in series(body, name) if l["UUID"] == lost], [], name)
                self.assertEqual(len(series(body, name)), 7, name)
            self.assertIn(lost, {l["UUID"] for l, _ in series(body, "gpulet_sample_age_seconds")})
        finally:
            ex.cleanup()

    def test_mig_repartition_never_mislabels(self):
        """MIG instances of GPU 6 swap places: no scrape shows one instance's memory under the other's
        GPU_I_ID, and the exporter exits (to be restarted on the new layout) saying why."""
        ex = Exporter(fixture("dgx-a100"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            doc = load("dgx-a100")
            migs = doc["gpus"][6]["mig"]
            totals = {str(m["gi"]): None for m in migs}

            def gpu6_instances(b):
                return {l["GPU_I_ID"] for l, _ in series(b, "DCGM_FI_DEV_FB_TOTAL") if l["gpu"] == "6" and "GPU_I_ID" in l}

            # every instance sampled once before the swap, so each has its own value to compare with
            ex.wait_for(lambda b: gpu6_instances(b) == set(totals), what="every MIG instance of GPU 6 sampled")
            body = ex.scrape()
            for l, v in series(body, "DCGM_FI_DEV_FB_TOTAL"):
                if l["gpu"] == "6" and "GPU_I_ID" in l:
                    totals[l["GPU_I_ID"]] = v
            migs[0], migs[1] = migs[1], migs[0]  # NVML index 0 is now the 2g.10gb instance
            write_json_atomic(ex.fixture, doc)
            deadline = time.time() + 15
            while ex.proc.poll() is None and time.time() < deadline:
                try:
                    body = ex.scrape()
                except Exception:
                    break
                for l, v in series(body, "DCGM_FI_DEV_FB_TOTAL"):
                    if l["gpu"] == "6" and "GPU_I_ID" in l:
                        self.assertEqual(v, totals[l["GPU_I_ID"]], l)
                time.sleep(0.05)
            self.assertEqual(ex.proc.wait(15), 0)
            self.assertIn("MIG layout changed", ex.text())
        finally:
            ex.cleanup()

    def test_nvml_missing_serves_not_ready(self):
        ex = Exporter(fixture("single-t4"), ["--nvml-library", "/nonexistent/libnvidia-ml.so.1"])
        try:
            time.sleep(0.3)
            status, _, body = ex.get("/metrics")
            self.assertEqual(status, 200)
            self.assertIn("gpulet_exporter_ready 0", body)
            self.assertEqual(promcheck(body)[0], 0)
            self.assertEqual(ex.get("/healthz")[0], 503)
            self.assertIn("cannot load NVML", ex.text())
        finally:
            ex.cleanup()


class Xid(unittest.TestCase):
    def test_xid_events(self):
        ex = Exporter(fixture("dgx-h100"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            ex.wait_for(lambda b: len(series(b, "DCGM_FI_DEV_GPU_TEMP")) == 8, what="8 GPUs sampled")
            time.sleep(0.5)  # the event thread registers after the samplers start
            doc = load("dgx-h100")
            u1, u2 = doc["gpus"][1]["uuid"], doc["gpus"][2]["uuid"]
            ex.add_event("xid 1 13")
            ex.add_event("xid 2 79")
            ex.add_event("xid 2 79")
            body = ex.wait_for(lambda b: any(v == 2 for l, v in series(b, "gpulet_xid_errors_total")),
                               what="XIDs counted")
            last = {l["UUID"]: v for l, v in series(body, "DCGM_FI_DEV_XID_ERRORS")}
            self.assertEqual(last[u1], 13)
            self.assertEqual(last[u2], 79)
            self.assertEqual(last[doc["gpus"][0]["uuid"]], 0)
            counts = {(l["UUID"], l["xid"]): v for l, v in series(body, "gpulet_xid_errors_total")}
            self.assertEqual(counts, {(u1, "13"): 1, (u2, "79"): 2})
            health = {l["UUID"]: v for l, v in series(body, "gpulet_gpu_healthy")}
            self.assertEqual(health[u1], 1)  # XID 13 is an application error
            self.assertEqual(health[u2], 0)
            self.assertIn("xid=79", ex.text())
            self.assertEqual(promcheck(body)[0], 0)
        finally:
            ex.cleanup()

    def test_xids_counted_after_a_failed_wait(self):
        """nvmlEventSetWait fails twice: the exporter says so once and keeps counting XIDs (the old
        event loop stopped for good after the first failure)."""
        ex = Exporter(fixture("dgx-h100"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            deadline = time.time() + 15
            while "Watching NVML events" not in ex.text() and time.time() < deadline:
                time.sleep(0.05)
            self.assertIn("registered=8", ex.text())
            u1 = load("dgx-h100")["gpus"][1]["uuid"]
            ex.add_event("xid 1 13")
            ex.wait_for(lambda b: any(l["UUID"] == u1 and v == 1 for l, v in series(b, "gpulet_xid_errors_total")),
                        what="the XID before the failures counted")
            ex.add_event("wait_error UNKNOWN")
            ex.add_event("wait_error GPU_IS_LOST")
            ex.add_event("xid 1 13")
            ex.add_event("xid 1 31")
            body = ex.wait_for(lambda b: len(series(b, "gpulet_xid_errors_total")) == 2,
                               what="XIDs counted after the failed waits")
            counts = {(l["UUID"], l["xid"]): v for l, v in series(body, "gpulet_xid_errors_total")}
            self.assertEqual(counts, {(u1, "13"): 2, (u1, "31"): 1})
            last = {l["UUID"]: v for l, v in series(body, "DCGM_FI_DEV_XID_ERRORS")}
            self.assertEqual(last[u1], 31)
            # one line per failure streak, not one per failed wait
            self.assertEqual(ex.text().count("NVML event wait failed"), 1, ex.text())
            self.assertNotIn("XID counting stops", ex.text())
        finally:
            ex.cleanup()


def pods_for(doc):
    """Whole GPU, a MIG instance, and two pods on replicas of one GPU (time-slicing)."""
    g0, g1 = doc["gpus"][0]["uuid"], doc["gpus"][1]["uuid"]
    mig = doc["gpus"][6]["mig"][0]["cis"][0]["uuid"]
    return [
        {"name": "train-0", "namespace": "ml", "containers": [
            {"name": "worker", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": [g0]},
                                           {"resource_name": "example.com/nic", "device_ids": ["nic0"]}]}]},
        {"name": "infer-a", "namespace": "web", "containers": [
            {"name": "srv", "devices": [{"resource_name": "nvidia.com/mig-3g.20gb", "device_ids": [mig]}]}]},
        {"name": "share-1", "namespace": "web", "containers": [
            {"name": "c", "devices": [{"resource_name": "nvidia.com/gpu.shared", "device_ids": [g1 + "::0"]}]}]},
        {"name": "share-2", "namespace": "web", "containers": [
            {"name": "c", "devices": [{"resource_name": "nvidia.com/gpu.shared", "device_ids": [g1 + "::3"]}]}]},
    ]


class Attribution(unittest.TestCase):
    def run_with(self, extra):
        doc = load("dgx-a100")
        ex = None
        import tempfile
        root = tempfile.mkdtemp(prefix="gpulet-root-")
        sock = os.path.join(root, "var/lib/kubelet/pod-resources/kubelet.sock")
        pr = PodResources(sock, pods_for(doc))
        try:
            ex = Exporter(fixture("dgx-a100"), ["--collect-interval", "200", "--pod-resources-interval", "200", "-k"] + extra,
                          root=root)
            # attribution, and a first utilization sample of GPUs 0 and 1, which the tests compare (on a
            # loaded machine the samplers may lag the PodResources refresh)
            util = ['DCGM_FI_DEV_GPU_UTIL{' + 'gpu="%d",UUID="%s"' % (i, doc["gpus"][i]["uuid"]) for i in (0, 1)]
            g6 = doc["gpus"][6]

            def mig_fb(b):  # the first memory sample of GPU 6's MIG instance, which lags under ASan
                return any(l["UUID"] == g6["uuid"] and l.get("GPU_I_ID") == str(g6["mig"][0]["gi"])
                           for l, _ in series(b, "DCGM_FI_DEV_FB_USED"))
            body = ex.wait_for(lambda b: "gpulet_pod_gpu_allocated{" in b and "GPU_I_PROFILE" in b and
                               all(u in b for u in util) and mig_fb(b),
                               what="attribution, GPU 0/1 utilization and GPU 6's MIG memory")
            return doc, ex, pr, body
        except BaseException:
            pr.stop()
            if ex:
                ex.cleanup()
            raise

    def test_whole_gpu_mig_and_replicas(self):
        doc, ex, pr, body = self.run_with([])
        try:
            g0, g1 = doc["gpus"][0]["uuid"], doc["gpus"][1]["uuid"]
            mig6 = doc["gpus"][6]["mig"][0]
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
            util = {l["UUID"]: l for l, _ in series(body, "DCGM_FI_DEV_GPU_UTIL") if "GPU_I_ID" not in l}
            self.assertEqual((util[g0]["pod"], util[g0]["namespace"], util[g0]["container"]), ("train-0", "ml", "worker"))
            # shared by two pods: one series, for one of them, as dcgm-exporter (the highest replica)
            self.assertEqual((util[g1]["pod"], util[g1].get("vgpu")), ("share-2", None))
            fb = [l for l, _ in series(body, "DCGM_FI_DEV_FB_USED") if l.get("GPU_I_ID") == str(mig6["gi"])
                  and l["UUID"] == doc["gpus"][6]["uuid"]]
            self.assertEqual([(l["pod"], l["namespace"], l["container"]) for l in fb], [("infer-a", "web", "srv")])
            alloc = sorted((l["UUID"], l.get("GPU_I_ID", ""), l["pod"], l.get("vgpu", ""), l["resource"])
                           for l, v in series(body, "gpulet_pod_gpu_allocated") if v == 1)
            self.assertEqual(alloc, sorted([
                (g0, "", "train-0", "", "nvidia.com/gpu"),
                (doc["gpus"][6]["uuid"], str(mig6["gi"]), "infer-a", "", "nvidia.com/mig-3g.20gb"),
                (g1, "", "share-1", "0", "nvidia.com/gpu.shared"),
                (g1, "", "share-2", "3", "nvidia.com/gpu.shared"),
            ]))
            # the pod goes away: its labels go with the next refresh (no 30-minute stale labels, #140)
            pr.set(pods_for(doc)[1:])
            body = ex.wait_for(lambda b: "train-0" not in b, what="stale pod dropped")
            # kubelet goes away: errors are counted, and the last good answer is kept only for
            # 6 refresh intervals (here 1.2 s): then the pod labels go away
            pr.stop()
            t0 = time.time()
            body = ex.wait_for(lambda b: any(v > 0 for _, v in series(b, "gpulet_podresources_errors_total")),
                               what="PodResources errors counted")
            body = ex.wait_for(lambda b: "infer-a" not in b, what="pod labels dropped")
            self.assertLess(time.time() - t0, 10)
            self.assertEqual([l for l, _ in series(body, "DCGM_FI_DEV_FB_USED") if "pod" in l], [])
        finally:
            pr.stop()
            ex.cleanup()

    def test_virtual_gpus(self):
        doc, ex, pr, body = self.run_with(["--kubernetes-virtual-gpus"])
        try:
            g1 = doc["gpus"][1]["uuid"]
            temp = sorted((l["pod"], l["vgpu"]) for l, _ in series(body, "DCGM_FI_DEV_GPU_TEMP")
                          if l["UUID"] == g1)
            self.assertEqual(temp, [("share-1", "0"), ("share-2", "3")])
            # GPU_UTIL (and FB_USED) per pod come from the pods' processes, which need their UIDs (a pods
            # watch; none here): the GPU's own line, never the whole GPU's value under each pod (issue 35)
            util = [l for l, _ in series(body, "DCGM_FI_DEV_GPU_UTIL") if l["UUID"] == g1]
            self.assertEqual([l.get("pod") for l in util], [None])
            self.assertIn("FB_USED and GPU_UTIL have no per-pod values", ex.text())
            self.assertEqual(promcheck(body)[0], 0)
        finally:
            pr.stop()
            ex.cleanup()


class Deploy(unittest.TestCase):
    def test_daemonset_args_are_real_flags(self):
        """Every flag the exporter and labels DaemonSets pass (the kustomize base, generated from the
        Helm chart) is one the binary documents."""
        from helm_lib import find, load_base
        docs = load_base()
        self.assertEqual(next(d for d in docs if d["kind"] == "Service" and "exporter" in d["metadata"]["name"])
                         ["metadata"]["name"], "gpulet-exporter")
        ds = find(docs, "DaemonSet", "exporter")
        containers = ds["spec"]["template"]["spec"]["containers"]
        self.assertEqual([c["command"][1] for c in containers], ["exporter"])
        for c in containers:
            verb, flags = c["command"][1], [a.split("=")[0] for a in c["args"]]
            self.assertTrue(flags)
            helptext = subprocess.run([os.environ.get("GPULET", os.path.join(SRC, "build", "gpulet")), verb, "--help"],
                                      capture_output=True, text=True).stdout
            for flag in flags:
                self.assertIn(flag + " ", helptext.replace("=", " ").replace("[", " "), (verb, flag))

    def test_same_nodes_as_plugin_and_least_privilege(self):
        """The exporter runs where the plugin runs (stock NFD labels, not only the GPU Operator's) and
        keeps the same fences: seccomp RuntimeDefault, no service-account token, no capabilities."""
        from helm_lib import find, load_base
        docs = load_base()

        def pod(component):
            return find(docs, "DaemonSet", component)["spec"]["template"]["spec"]
        def placement(p, deploy):
            """The affinity without the GPU Operator's pause term, which each DaemonSet keys on its own
            operand's label (docs/reference/helm-chart.md "Pause labels"): that term must be there."""
            aff = copy.deepcopy(p["affinity"])
            terms = aff["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            for t in terms:
                keys = [e["key"] for e in t["matchExpressions"] if e["key"].startswith("nvidia.com/gpu.deploy.")]
                self.assertEqual(keys, ["nvidia.com/gpu.deploy." + deploy], t)
                t["matchExpressions"] = [e for e in t["matchExpressions"] if e["key"] not in keys]
            return aff
        exp, plug = pod("exporter"), pod("device-plugin")
        self.assertEqual(placement(exp, "dcgm-exporter"), placement(plug, "device-plugin"))
        self.assertNotIn("nodeSelector", exp)
        self.assertEqual(exp["securityContext"]["seccompProfile"]["type"], "RuntimeDefault")
        for c in exp["containers"]:
            self.assertEqual(c["securityContext"]["capabilities"]["drop"], ["ALL"])
            self.assertFalse(c["securityContext"]["allowPrivilegeEscalation"])


COLLECTORS = os.path.join(SRC, "deploy", "image", "dcgm-exporter.csv")


def csv_rows(path):
    """(field, type, help) of a collectors file, read as dcgm-exporter reads it (Python's csv module:
    an independent reader of the same RFC 4180 records)."""
    import csv
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
    return [tuple(x.strip() for x in r) for r in rows]


def families(body):
    """{name: (type, help)} of the # TYPE / # HELP lines of a scrape."""
    out, helps = {}, {}
    for line in body.splitlines():
        if line.startswith("# HELP "):
            name, _, text = line[7:].partition(" ")
            helps[name] = text
        elif line.startswith("# TYPE "):
            name, _, typ = line[7:].partition(" ")
            out[name] = (typ, helps.get(name))
    return out


class Collectors(unittest.TestCase):
    """Issue 14: dcgm-exporter's collectors file, its counters, GPM, unavailable fields, flags."""

    def test_dcgm_default_fields_on_h100(self):
        """Every default and DCP field NVML gives is served with the file's name, type and help; GPM
        ratios on Hopper; a DCGM field gpulet does not sample is listed once by the info metric."""
        ex = Exporter(fixture("dgx-h100"), ["-f", COLLECTORS, "--collect-interval", "200", "--kubernetes=false"])
        try:
            body = ex.wait_for(lambda b: len(series(b, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")) == 8 and
                               "gpulet_exporter_field_unavailable" in b, what="GPM values and the probe")
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
            fam = families(body)
            rows = csv_rows(COLLECTORS)
            served = [r for r in rows if r[1] != "label" and r[0] != "DCGM_FI_DEV_VGPU_LICENSE_STATUS"]
            for name, typ, help_ in served:
                self.assertEqual(fam.get(name), (typ, help_), name)
            self.assertEqual(len(fam.keys() & {r[0] for r in rows}), len(served))
            # fields not in the file are not served (ECC is not in dcgm-exporter's default set)
            self.assertNotIn("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", fam)
            self.assertNotIn("DCGM_FI_DEV_FB_TOTAL", fam)
            doc = load("dgx-h100")
            gpm = doc["models"]["h100-sxm5-80gb"]["telemetry"]["gpm"]
            tel = doc["models"]["h100-sxm5-80gb"]["telemetry"]
            one = lambda name: {v for _, v in series(body, name)}
            self.assertEqual(one("DCGM_FI_PROF_GR_ENGINE_ACTIVE"), {gpm["graphics"] / 100})
            self.assertEqual(one("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"), {gpm["tensor"] / 100})
            self.assertEqual(one("DCGM_FI_PROF_DRAM_ACTIVE"), {gpm["dram"] / 100})
            self.assertEqual(one("DCGM_FI_PROF_PCIE_TX_BYTES"), {gpm["pcie_tx_mib_s"] * 1048576})
            self.assertEqual(one("DCGM_FI_DEV_MEMORY_TEMP"), {tel["memory_temp_c"]})
            self.assertEqual(one("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), {tel["energy_mj"]})
            self.assertEqual(one("DCGM_FI_DEV_FB_RESERVED"), {tel["memory_reserved_mib"]})
            unavailable = series(body, "gpulet_exporter_field_unavailable")
            self.assertEqual([l["field"] for l, _ in unavailable], ["DCGM_FI_DEV_VGPU_LICENSE_STATUS"])
            labels = series(body, "DCGM_FI_DEV_GPU_TEMP")[0][0]
            self.assertEqual(labels["DCGM_FI_DRIVER_VERSION"], doc["driver_version"])
            self.assertEqual(ex.text().count("DCGM_FI_DEV_VGPU_LICENSE_STATUS"), 1, ex.text())
        finally:
            ex.cleanup()

    def test_no_gpm_on_a100_one_warning(self):
        """dgx-a100 has no GPM: the GPM fields are absent, listed, and warned about once; PCIe bytes come
        from NVML's PCIe throughput instead."""
        env = {"DCGM_EXPORTER_COLLECTORS": COLLECTORS}  # the env var, as the GPU Operator sets it
        ex = Exporter(fixture("dgx-a100"), ["--collect-interval", "200", "--kubernetes=false"], env=env)
        try:
            body = ex.wait_for(lambda b: "gpulet_exporter_field_unavailable" in b and
                               "needs GPM" in b, what="the probe")
            time.sleep(0.5)
            body = ex.scrape()
            for f in ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"):
                self.assertEqual(series(body, f), [], f)
                self.assertIn(f, {l["field"] for l, _ in series(body, "gpulet_exporter_field_unavailable")})
            warn = [l for l in ex.text().splitlines() if "level=warn" in l and "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in l]
            self.assertEqual(len(warn), 1, ex.text())
            tel = load("dgx-a100")["models"]["a100-sxm4-40gb"]["telemetry"]
            tx = {v for l, v in series(body, "DCGM_FI_PROF_PCIE_TX_BYTES")}
            self.assertEqual(tx, {tel["pcie_kib_per_s"]["tx"] * 1024})
        finally:
            ex.cleanup()

    def test_mixed_gpm_node_warns_once_naming_the_gpus(self):
        """dgx-h100 with GPU 2 lacking GPM: the GPM fields are served for the other seven, not listed as
        unavailable, and one warning names GPU 2."""
        doc = load("dgx-h100")
        doc["gpus"][2]["gpm_supported"] = False
        d = tempfile.mkdtemp(prefix="gpulet-mixed-")
        write_json_atomic(os.path.join(d, "mixed.json"), doc)
        ex = Exporter(os.path.join(d, "mixed.json"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            body = ex.wait_for(lambda b: len(series(b, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")) == 7 and
                               "GPUs without GPM" in ex.text(), what="GPM values and the warning")
            gpm_uuids = {l["UUID"] for l, _ in series(body, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")}
            self.assertNotIn(doc["gpus"][2]["uuid"], gpm_uuids)
            self.assertNotIn("DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                             {l["field"] for l, _ in series(body, "gpulet_exporter_field_unavailable")})
            time.sleep(0.5)
            warn = [l for l in ex.text().splitlines() if "GPUs without GPM" in l]
            self.assertEqual(len(warn), 1, ex.text())
            self.assertIn("uuids=" + doc["gpus"][2]["uuid"], warn[0])
        finally:
            ex.cleanup()
            shutil.rmtree(d, ignore_errors=True)

    def test_bad_collectors_file_names_file_and_line(self):
        d = tempfile.mkdtemp(prefix="gpulet-csv-")
        cases = {
            "DCGM_FI_DEV_GPU_TEMPERATURE, gauge, typo\n": (2, "unknown field 'DCGM_FI_DEV_GPU_TEMPERATURE'"),
            "DCGM_FI_DEV_GPU_TEMP, gage, typo\n": (2, "unknown Prometheus type 'gage'"),
            "DCGM_FI_DEV_GPU_TEMP, gauge\n": (2, "2 fields where dcgm-exporter needs 3"),
            'DCGM_FI_DEV_GPU_TEMP, gauge, a "quote"\n': (2, "inside an unquoted field"),
        }
        try:
            for text, (line, words) in cases.items():
                with self.subTest(text=text):
                    path = os.path.join(d, "c.csv")
                    with open(path, "w") as f:
                        f.write("# header\n" + text)
                    p = subprocess.run([os.environ.get("GPULET", os.path.join(SRC, "build", "gpulet")), "exporter",
                                        "-f", path, "--address", "127.0.0.1:0"], capture_output=True, text=True,
                                       timeout=20)
                    self.assertEqual(p.returncode, 1, p.stderr)
                    self.assertIn("%s:%d:" % (path, line), p.stderr)
                    self.assertIn(words, p.stderr)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_upstream_flags_are_accepted(self):
        """The flags dcgm-exporter's chart and DaemonSets pass start the exporter; those that mean
        nothing here say so once each."""
        ex = Exporter(fixture("single-t4"), [
            "-f", COLLECTORS, "-x", "300000",
            "-o", "--kubernetes-gpu-id-type", "device-name", "-d", "f", "-r", "localhost:5555",
            "--debug", "--kubernetes=false", "-rbmn"])
        try:
            body = ex.wait_for(lambda b: "DCGM_FI_DEV_GPU_TEMP{" in b, what="first sample")
            # -rbmn is upstream's alias of --replace-blanks-in-model-name, not -r with the value "bmn"
            model = load("single-t4")["models"][load("single-t4")["gpus"][0]["model"]]["name"]
            self.assertIn(" ", model)
            self.assertEqual({l["modelName"] for l, _ in series(body, "DCGM_FI_DEV_GPU_TEMP")},
                             {model.replace(" ", "-")})
            log = ex.text()
            # --web-config-file is served now (test_exporter_webconfig.py): a missing file is exit 1
            # -x, -o and --kubernetes-gpu-id-type are served (test_exporter_dcgm.py): no warning
            self.assertNotIn("flag=--kubernetes-gpu-id-type", log)
            self.assertEqual(log.count("flag=--remote-hostengine-info "), 1, log)
            # without -k upstream ignores --kubernetes-enable-pod-labels too: taken, no pods watch, no warning
            self.assertNotIn("kubernetes-enable-pod-labels", log)
            self.assertNotIn("pods", log)
            self.assertIn("level=debug", log)
        finally:
            ex.cleanup()


class Mig(unittest.TestCase):
    """Issue 14 point 4: a MIG GPU's series are its instances' by default (dcgm-exporter's -d f)."""

    def scrape(self, args, env=None, fb_series=13):
        ex = Exporter(fixture("dgx-a100"), ["--collect-interval", "200", "--kubernetes=false"] + args, env=env)
        try:
            return ex.wait_for(lambda b: len({l["gpu"] for l, _ in series(b, "DCGM_FI_DEV_GPU_TEMP")}) == 8 and
                               len(series(b, "DCGM_FI_DEV_FB_TOTAL")) >= fb_series, what="all GPUs sampled")
        finally:
            ex.cleanup()

    def test_instances_only_by_default(self):
        body = self.scrape([])
        doc = load("dgx-a100")
        parents = [l for l, _ in series(body, "DCGM_FI_DEV_FB_USED") if l["gpu"] in ("6", "7") and "GPU_I_ID" not in l]
        self.assertEqual(parents, [])
        # the memory of a namespace is counted once: instances' FB_USED sum to the processes on them
        g6 = doc["gpus"][6]
        used6 = sum(v for l, v in series(body, "DCGM_FI_DEV_FB_USED") if l["gpu"] == "6")
        self.assertEqual(used6, sum(p["used_mib"] for p in g6["telemetry"]["processes"]))
        # device-wide fields show the GPU's value on each instance; GPU_UTIL is not per instance
        temps = [(l.get("GPU_I_ID"), v) for l, v in series(body, "DCGM_FI_DEV_GPU_TEMP") if l["gpu"] == "6"]
        self.assertEqual(sorted(t[0] for t in temps), sorted(str(m["gi"]) for m in g6["mig"]))
        self.assertEqual({t[1] for t in temps}, {doc["models"]["a100-sxm4-40gb"]["telemetry"]["temperature_c"]})
        self.assertEqual([l for l, _ in series(body, "DCGM_FI_DEV_GPU_UTIL") if l["gpu"] == "6"], [])
        xid = [l for l, _ in series(body, "DCGM_FI_DEV_XID_ERRORS") if l["gpu"] == "6"]
        self.assertEqual(len(xid), len(g6["mig"]))
        rc, out = promcheck(body)
        self.assertEqual(rc, 0, out)

    def test_parent_kept_on_request(self):
        for args, env in ((["--mig-parent-metrics"], None), ([], {"GPULET_EXPORTER_MIG_PARENT_METRICS": "true"})):
            with self.subTest(args=args, env=env):
                body = self.scrape(args, env, fb_series=15)
                parents = [l for l, _ in series(body, "DCGM_FI_DEV_FB_USED") if l["gpu"] == "6" and "GPU_I_ID" not in l]
                self.assertEqual(len(parents), 1)
                self.assertEqual(len([l for l, _ in series(body, "DCGM_FI_DEV_FB_USED") if l["gpu"] == "6"]), 5)

    def test_gpm_per_gpu_instance(self):
        """On Hopper the GPM ratios are per MIG instance (nvmlGpmMigSampleGet with the GPU instance id);
        every compute instance of one GPU instance shows that instance's value."""
        ex = Exporter(fixture("mig-ci-split"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            body = ex.wait_for(lambda b: len(series(b, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")) == 5, what="GPM per instance")
            doc = load("mig-ci-split")
            gi1 = doc["gpus"][0]["mig"][0]["gpm"]
            gpu = doc["models"]["h100-sxm5-80gb"]["telemetry"]["gpm"]
            got = sorted((l["gpu"], l.get("GPU_I_ID"), l.get("GPU_CI_ID"), v)
                         for l, v in series(body, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"))
            want = sorted([("0", "1", None, gi1["graphics"] / 100)] +
                          [("0", "2", str(c), gpu["graphics"] / 100) for c in range(3)] +
                          [("1", None, None, gpu["graphics"] / 100)])
            self.assertEqual(got, want)
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
        finally:
            ex.cleanup()

    def test_devices_g_serves_gpus_only(self):
        body = self.scrape(["-d", "g"], fb_series=8)
        self.assertNotIn("GPU_I_ID", "".join(l for l in body.splitlines() if l.startswith("DCGM_")))
        self.assertEqual(len(series(body, "DCGM_FI_DEV_FB_USED")), 8)


if __name__ == "__main__":
    unittest.main(verbosity=2)
