#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Black-box tests of `gpulet exporter` on the fake NVML: promtool on live scrapes of every fixture,
pod attribution through a python3-grpcio PodResources server, a hung NVML call on one GPU, XIDs from
NVML events, HTTP limits. Run by CTest (exporter_integration)."""
import json
import os
import socket
import subprocess
import sys
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
                    body = ex.wait_for(lambda b: "gpulet_exporter_ready 1" in b and
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
                    self.assertEqual(sorted(l["UUID"] for l, _ in ages if l["UUID"]),
                                     sorted(g["uuid"] for g in gpus if not g.get("lost")))
                    # unhealthy: lost, or NVML reports a volatile DBE / pending remap / remap failure now
                    lost = [l["gpu"] for l, v in healthy if v == 0 and "GPU_I_ID" not in l]
                    self.assertEqual(lost, [str(i) for i, g in enumerate(gpus) if g.get("lost") or nvml_bad(doc, g)])
                    for labels, _ in ages:
                        if not labels["UUID"]:
                            continue
                        self.assertEqual(labels["Hostname"], "node-a")
                        self.assertEqual(labels["DCGM_FI_DRIVER_VERSION"], doc["driver_version"])
                        g = next(g for g in gpus if g["uuid"] == labels["UUID"])
                        self.assertEqual(labels["device"], "nvidia%d" % g["minor"])
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
        cls.ex.wait_for(lambda b: "gpulet_exporter_ready 1" in b, what="ready")

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
        GPU 3 keeps its last values and its sample age grows."""
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
            util = {l["UUID"] for l, _ in series(body, "DCGM_FI_DEV_GPU_UTIL")}
            self.assertEqual(len(util), 8, "the hung GPU's last values or another GPU went missing")
            # stopping does not wait for the hung call forever
            t0 = time.time()
            self.assertEqual(ex.stop(timeout=15), 0)
            self.assertLess(time.time() - t0, 10)
        finally:
            ex.cleanup()

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
        finally:
            ex.cleanup()

    def test_mig_repartition_never_mislabels(self):
        """MIG instances of GPU 6 swap places: no scrape shows one instance's memory under the other's
        GPU_I_ID, and the exporter exits (to be restarted on the new layout) saying why."""
        ex = Exporter(fixture("dgx-a100"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            ex.wait_for(lambda b: "GPU_I_PROFILE" in b, what="MIG series")
            doc = load("dgx-a100")
            migs = doc["gpus"][6]["mig"]
            totals = {str(m["gi"]): None for m in migs}
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
            ex = Exporter(fixture("dgx-a100"), ["--collect-interval", "200", "--pod-resources-interval", "200"] + extra,
                          root=root)
            # attribution, and a first utilization sample of GPUs 0 and 1, which the tests compare (on a
            # loaded machine the samplers may lag the PodResources refresh)
            util = ['DCGM_FI_DEV_GPU_UTIL{' + 'gpu="%d",UUID="%s"' % (i, doc["gpus"][i]["uuid"]) for i in (0, 1)]
            body = ex.wait_for(lambda b: "gpulet_pod_gpu_allocated{" in b and "GPU_I_PROFILE" in b and
                               all(u in b for u in util), what="attribution and GPU 0/1 utilization")
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
            self.assertNotIn("pod", util[g1])  # shared by two pods: not given to one of them
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
            # kubelet goes away: the last good answer stays, errors are counted
            pr.stop()
            body = ex.wait_for(lambda b: any(v > 0 for _, v in series(b, "gpulet_podresources_errors_total")),
                               what="PodResources errors counted")
            self.assertIn("infer-a", body)
        finally:
            ex.cleanup()

    def test_virtual_gpus(self):
        doc, ex, pr, body = self.run_with(["--kubernetes-virtual-gpus"])
        try:
            g1 = doc["gpus"][1]["uuid"]
            util = sorted((l["pod"], l["vgpu"]) for l, _ in series(body, "DCGM_FI_DEV_GPU_UTIL")
                          if l["UUID"] == g1)
            self.assertEqual(util, [("share-1", "0"), ("share-2", "3")])
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
        exp, plug = pod("exporter"), pod("device-plugin")
        self.assertEqual(exp["affinity"], plug["affinity"])
        self.assertNotIn("nodeSelector", exp)
        self.assertEqual(exp["securityContext"]["seccompProfile"]["type"], "RuntimeDefault")
        for c in exp["containers"]:
            self.assertEqual(c["securityContext"]["capabilities"]["drop"], ["ALL"])
            self.assertFalse(c["securityContext"]["allowPrivilegeEscalation"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
