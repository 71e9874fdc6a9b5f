# SPDX-License-Identifier: Apache-2.0
"""What a dcgm-exporter user's alerts and queries read, series by series (docs/reference/dcgm-exporter.md):
XID labels and the windowed XID count, whole numbers where DCGM has int64s, the device label and lost
GPUs, /health's body, -o's 1.x label names. Every test here failed before these were served."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exporter_lib import PY, SRC, Exporter, PodResources, fixture, series, write_json_atomic  # noqa: E402


def load(name):
    with open(fixture(name)) as f:
        return json.load(f)


def promcheck(body):
    p = subprocess.run([PY, os.path.join(SRC, "tests", "integration", "promcheck.py")], input=body.encode(),
                       capture_output=True, timeout=60)
    return p.returncode, (p.stdout + p.stderr).decode()


_TEMP_DIRS = []


def tearDownModule():
    for d in _TEMP_DIRS:
        shutil.rmtree(d, ignore_errors=True)


def temp_dir(prefix):
    """A directory removed when the module's tests are done."""
    d = tempfile.mkdtemp(prefix=prefix)
    _TEMP_DIRS.append(d)
    return d


def with_fixture(doc):
    """A fixture file for doc (the Exporter copies it)."""
    d = temp_dir("gpulet-fx-")
    path = os.path.join(d, "fixture.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path, d


def collectors(text):
    d = temp_dir("gpulet-csv-")
    path = os.path.join(d, "counters.csv")
    with open(path, "w") as f:
        f.write(text)
    return path, d


class Xid(unittest.TestCase):
    def test_last_xid_has_err_code_and_err_msg(self):
        """dcgm-exporter's DCGM_FI_DEV_XID_ERRORS carries err_code and its err_msg table's words."""
        ex = Exporter(fixture("dgx-h100"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            body = ex.wait_for(lambda b: "DCGM_FI_DEV_XID_ERRORS{" in b, what="XID series")
            for labels, v in series(body, "DCGM_FI_DEV_XID_ERRORS"):
                self.assertEqual((labels.get("err_code"), labels.get("err_msg"), v), ("0", "No Error", 0))
            ex.add_event("xid 1 13")
            ex.add_event("xid 2 999")
            body = ex.wait_for(lambda b: any(v == 999 for _, v in series(b, "DCGM_FI_DEV_XID_ERRORS")),
                               what="XIDs 13 and 999")
            got = {l["gpu"]: (l["err_code"], l["err_msg"], v) for l, v in series(body, "DCGM_FI_DEV_XID_ERRORS")}
            self.assertEqual(got["1"], ("13", "Graphics Engine Exception", 13))
            self.assertEqual(got["2"], ("999", "Unknown Error", 999))
            self.assertEqual(got["0"], ("0", "No Error", 0))
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
        finally:
            ex.cleanup()

    def test_xid_count_window(self):
        """DCGM_EXP_XID_ERRORS_COUNT: XIDs per code within -x ms; 0 without an xid label when none."""
        path, d = collectors("DCGM_FI_DEV_GPU_TEMP, gauge, temp\n"
                             "DCGM_EXP_XID_ERRORS_COUNT, counter, reported XIDs during last window\n")
        ex = Exporter(fixture("dgx-h100"), ["--collect-interval", "200", "--kubernetes=false", "-f", path,
                                            "-x", "3000"])
        try:
            body = ex.wait_for(lambda b: "DCGM_EXP_XID_ERRORS_COUNT{" in b, what="XID count series")
            self.assertIn("# TYPE DCGM_EXP_XID_ERRORS_COUNT counter", body)
            zero = series(body, "DCGM_EXP_XID_ERRORS_COUNT")
            self.assertEqual(len(zero), 8)
            for labels, v in zero:
                self.assertEqual((labels["window_size_in_ms"], labels.get("xid"), v), ("3000", None, 0))
            ex.add_event("xid 1 79")
            ex.add_event("xid 1 79")
            ex.add_event("xid 1 13")
            body = ex.wait_for(lambda b: any(l.get("xid") == "79" and v == 2
                                             for l, v in series(b, "DCGM_EXP_XID_ERRORS_COUNT")), what="count 2")
            g1 = {l.get("xid"): v for l, v in series(body, "DCGM_EXP_XID_ERRORS_COUNT") if l["gpu"] == "1"}
            self.assertEqual(g1, {"79": 2, "13": 1})
            self.assertNotIn("DCGM_FI_DEV_XID_ERRORS{", body)  # not listed in the file
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
            # past the window the GPU is back to one series of 0
            body = ex.wait_for(lambda b: {l.get("xid") for l, _ in series(b, "DCGM_EXP_XID_ERRORS_COUNT")
                                          if l["gpu"] == "1"} == {None}, timeout=10, what="window passed")
            self.assertEqual([v for l, v in series(body, "DCGM_EXP_XID_ERRORS_COUNT") if l["gpu"] == "1"], [0])
        finally:
            ex.cleanup()


class ClockEvents(unittest.TestCase):
    def test_violations_pstate_clock_reasons_nvlink_errors(self):
        """The fields NVML answers are served when a collectors file lists them, a legacy name under
        that name; one the GPUs do not answer is listed by gpulet_exporter_field_unavailable."""
        doc = load("dgx-h100")
        t = doc["models"]["h100-sxm5-80gb"]["telemetry"]
        t.update({"pstate": 2, "enforced_power_limit_mw": 687500, "clocks_event_reasons": 0x24,
                  "violations_ns": {"power": 3000000123, "thermal": 7, "sync_boost": 0, "board_limit": 9,
                                    "low_util": 11},
                  "nvlink_errors": {"crc_flit": 1, "crc_data": 2, "replay": 3, "recovery": 4}})
        path, d = with_fixture(doc)
        names = ["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_PSTATE", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
                 "DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_THERMAL_VIOLATION", "DCGM_FI_DEV_SYNC_BOOST_VIOLATION",
                 "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "DCGM_FI_DEV_LOW_UTIL_VIOLATION",
                 "DCGM_FI_DEV_RELIABILITY_VIOLATION", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
                 "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
                 "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"]
        csv, d2 = collectors("".join("%s, %s, h\n" % (n, "gauge" if n in names[:3] else "counter") for n in names))
        ex = Exporter(path, ["--collect-interval", "200", "--kubernetes=false", "-f", csv])
        try:
            body = ex.wait_for(lambda b: "gpulet_exporter_field_unavailable{" in b and
                               len(series(b, "DCGM_FI_DEV_PSTATE")) == 8, what="first rounds")
            want = {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": 0x24, "DCGM_FI_DEV_PSTATE": 2,
                    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": 687.5, "DCGM_FI_DEV_POWER_VIOLATION": 3000000123,
                    "DCGM_FI_DEV_THERMAL_VIOLATION": 7, "DCGM_FI_DEV_SYNC_BOOST_VIOLATION": 0,
                    "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION": 9, "DCGM_FI_DEV_LOW_UTIL_VIOLATION": 11,
                    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": 1,
                    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": 2,
                    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": 3,
                    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": 4}
            for name, v in want.items():
                self.assertEqual([x for _, x in series(body, name)], [v] * 8, name)
            self.assertIn("DCGM_FI_DEV_POWER_VIOLATION{", body)
            self.assertIn(" 3000000123\n", body)
            self.assertIn("# TYPE DCGM_FI_DEV_POWER_VIOLATION counter", body)
            self.assertNotIn("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", body)  # served under the file's name
            unavailable = {l["field"]: l["reason"] for l, _ in series(body, "gpulet_exporter_field_unavailable")}
            self.assertEqual(unavailable, {"DCGM_FI_DEV_RELIABILITY_VIOLATION": "not supported by these GPUs"})
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
        finally:
            ex.cleanup()


class NvLinkPerLink(unittest.TestCase):
    def test_per_link_bandwidth(self):
        """DCGM_FI_DEV_NVLINK_BANDWIDTH_L0..L17 (and DCGM 4's THROUGHPUT_L<n> name): each link's RX+TX KiB
        growth per second / 1000, as the total; a link the GPU lacks has no series and is no NVML error.
        These rows lie past the 64th of the table (the old mask's limit): every one is served."""
        doc = load("dgx-h100")
        links = [{"tx": 0, "rx": 0} for _ in range(18)]
        doc["models"]["h100-sxm5-80gb"]["telemetry"]["nvlink_kib_links"] = links
        doc["gpus"][1].setdefault("telemetry", {})["nvlink_kib_links"] = links[:12]  # an A100's 12 links
        path, d = with_fixture(doc)
        csv, d2 = collectors("".join("DCGM_FI_DEV_NVLINK_BANDWIDTH_L%d, counter, h\n" % k for k in range(17)) +
                             "DCGM_FI_DEV_NVLINK_THROUGHPUT_L17, counter, h\n"
                             "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, h\n")
        # a rate shows for one interval after the counter moves: 1 s so the scrapes see it
        ex = Exporter(path, ["--collect-interval", "1000", "--kubernetes=false", "-f", csv])
        try:
            body = ex.wait_for(lambda b: len(series(b, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L16")) == 7, what="first rounds")
            for k in range(12):
                self.assertEqual([v for _, v in series(body, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L%d" % k)], [0] * 8)
            self.assertEqual(sorted(l["gpu"] for l, _ in series(body, "DCGM_FI_DEV_NVLINK_THROUGHPUT_L17")),
                             [str(g) for g in range(8) if g != 1])
            self.assertIn("# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_L3 counter", body)
            self.assertEqual([v for _, v in series(body, "gpulet_nvml_errors_total")], [0] * 8)
            self.assertNotIn("gpulet_exporter_field_unavailable{", body)
            # link 3 of GPU 2 moves 50 GB/s: only its series and the total grow
            t0 = time.monotonic()
            doc["gpus"][2].setdefault("telemetry", {})["nvlink_kib_links"] = [
                {"tx": 0, "rx": 0} if k != 3 else {"tx": 25000000, "rx": 25000000} for k in range(18)]
            write_json_atomic(ex.fixture, doc)

            def moved(b):
                return [v for l, v in series(b, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L3") if l["gpu"] == "2" and v > 0]
            body = ex.wait_for(moved, what="link 3 rate")
            self.assertGreater(moved(body)[0], 50000000 / 1000 / (time.monotonic() - t0 + 1.5))
            others = [(l["gpu"], k) for k in range(17) for l, v in
                      series(body, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L%d" % k) if v and (l["gpu"], k) != ("2", 3)]
            self.assertEqual(others, [])
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
        finally:
            ex.cleanup()


class P2PStatus(unittest.TestCase):
    def test_p2p_status_per_peer(self):
        """DCGM_EXP_P2P_STATUS (upstream's p2p collector, from DCGM's nvmlDeviceGetP2PStatus over
        NVLink): per GPU one series per other GPU, peer_gpu and link_status labels, the status as value."""
        doc = load("pcie-4gpu")  # NVLink bridges 0-1 and 2-3
        doc["gpus"][3]["p2p_nvlink_status"] = {"0": 4}
        path, d = with_fixture(doc)
        csv, d2 = collectors("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"
                             "DCGM_EXP_P2P_STATUS, counter, P2P NvLink status\n")
        ex = Exporter(path, ["--collect-interval", "200", "--kubernetes=false", "-f", csv])
        try:
            body = ex.wait_for(lambda b: len(series(b, "DCGM_EXP_P2P_STATUS")) == 12, what="12 pairs")
            got = {(l["gpu"], l["peer_gpu"]): (l["link_status"], v) for l, v in series(body, "DCGM_EXP_P2P_STATUS")}
            want = {}
            for g in range(4):
                for p in range(4):
                    if g != p:
                        want[(str(g), str(p))] = ("OK", 0) if g // 2 == p // 2 else ("NotSupported", 5)
            want[("3", "0")] = ("DisabledByRegKey", 4)
            self.assertEqual(got, want)
            self.assertIn("# TYPE DCGM_EXP_P2P_STATUS counter", body)
            l, _ = series(body, "DCGM_EXP_P2P_STATUS")[0]
            self.assertEqual(l["device"], "nvidia" + l["gpu"])
            self.assertIn("UUID", l)
            self.assertNotIn("gpulet_exporter_field_unavailable{", body)
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
        finally:
            ex.cleanup()


class ClockEventsCount(unittest.TestCase):
    def test_clock_events_count_window(self):
        """DCGM_EXP_CLOCK_EVENTS_COUNT: samples per reason (upstream's names) within the window."""
        doc = load("dgx-h100")
        doc["models"]["h100-sxm5-80gb"]["telemetry"]["clocks_event_reasons"] = 0
        doc["gpus"][1].setdefault("telemetry", {})["clocks_event_reasons"] = 0x24  # power_cap, sw_thermal
        path, d = with_fixture(doc)
        csv, d2 = collectors("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"
                             "DCGM_EXP_CLOCK_EVENTS_COUNT, counter, reported clock events\n")
        ex = Exporter(path, ["--collect-interval", "200", "--kubernetes=false", "-f", csv,
                             "--clock-events-count-window-size", "2000"])
        try:
            body = ex.wait_for(lambda b: any(l.get("clock_event") == "power_cap" and v >= 3 for l, v in
                                             series(b, "DCGM_EXP_CLOCK_EVENTS_COUNT")), what="clock events counted")
            g1 = {l.get("clock_event"): v for l, v in series(body, "DCGM_EXP_CLOCK_EVENTS_COUNT") if l["gpu"] == "1"}
            self.assertEqual(set(g1), {"power_cap", "sw_thermal"})
            self.assertEqual(g1["power_cap"], g1["sw_thermal"])
            others = [(l.get("clock_event"), l["window_size_in_ms"], v)
                      for l, v in series(body, "DCGM_EXP_CLOCK_EVENTS_COUNT") if l["gpu"] != "1"]
            self.assertEqual(others, [(None, "2000", 0)] * 7)
            self.assertNotIn("flag=--clock-events-count-window-size", ex.text())
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
            doc["gpus"][1]["telemetry"]["clocks_event_reasons"] = 0
            write_json_atomic(ex.fixture, doc)
            ex.wait_for(lambda b: [l.get("clock_event") for l, _ in series(b, "DCGM_EXP_CLOCK_EVENTS_COUNT")
                                   if l["gpu"] == "1"] == [None], timeout=10, what="window passed")
        finally:
            ex.cleanup()


class StaticLabels(unittest.TestCase):
    def test_label_fields_on_every_series(self):
        """DCGM_FI_DEV_SERIAL, _VBIOS_VERSION, _INFOROM_IMAGE_VER listed with type label are labels of
        that name on the GPU's series (instances too); one the GPU does not answer is just absent."""
        doc = load("dgx-a100")
        for i, g in enumerate(doc["gpus"]):
            g["serial"] = "16501234%05d" % i
        doc["models"]["a100-sxm4-40gb"]["vbios_version"] = "92.00.45.00.05"
        path, d = with_fixture(doc)
        csv, d2 = collectors("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"
                             "DCGM_FI_DEV_SERIAL, label, Device Serial Number\n"
                             "DCGM_FI_DEV_VBIOS_VERSION, label, VBIOS version of the device\n"
                             "DCGM_FI_DEV_INFOROM_IMAGE_VER, label, Inforom image version\n")
        ex = Exporter(path, ["--collect-interval", "200", "--kubernetes=false", "-f", csv])
        try:
            body = ex.wait_for(lambda b: len({l["gpu"] for l, _ in series(b, "DCGM_FI_DEV_GPU_TEMP")}) == 8,
                               what="8 GPUs")
            temps = series(body, "DCGM_FI_DEV_GPU_TEMP")
            self.assertGreater(len(temps), 8)  # MIG instances of GPUs 6 and 7 too
            for l, _ in temps:
                self.assertEqual(l["DCGM_FI_DEV_SERIAL"], "16501234%05d" % int(l["gpu"]))
                self.assertEqual(l["DCGM_FI_DEV_VBIOS_VERSION"], "92.00.45.00.05")
                self.assertNotIn("DCGM_FI_DEV_INFOROM_IMAGE_VER", l)
            self.assertNotIn("gpulet_exporter_field_unavailable{field=\"DCGM_FI_DEV_SERIAL\"", body)
            # served as labels: the log must not say they are not sampled
            self.assertNotIn("does not sample this field", ex.text())
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
        finally:
            ex.cleanup()


    def test_every_static_label_field(self):
        """The other static fields dcgm-exporter can show as labels, with DCGM's values: NVML and CUDA
        versions, brand as DCGM's string, name, UUID, minor, PCI bus id, the three inforom object
        versions, compute mode renumbered as DCGM, persistence and virtualization mode as integers."""
        doc = load("dgx-a100")
        doc["models"]["a100-sxm4-40gb"].update({"inforom_oem_version": "2.0", "inforom_ecc_version": "6.16",
                                               "inforom_power_version": "7.0"})
        doc["gpus"][2]["compute_mode"] = 3  # EXCLUSIVE_PROCESS: DCGM says 2
        doc["gpus"][3]["compute_mode"] = 2  # PROHIBITED: DCGM says 1
        doc["gpus"][4]["persistence_mode"] = 0
        path, d = with_fixture(doc)
        fields = ["DCGM_FI_NVML_VERSION", "DCGM_FI_DEV_BRAND", "DCGM_FI_DEV_NAME", "DCGM_FI_DEV_UUID",
                  "DCGM_FI_DEV_MINOR_NUMBER", "DCGM_FI_DEV_PCI_BUSID", "DCGM_FI_DEV_OEM_INFOROM_VER",
                  "DCGM_FI_DEV_ECC_INFOROM_VER", "DCGM_FI_DEV_POWER_INFOROM_VER", "DCGM_FI_CUDA_DRIVER_VERSION",
                  "DCGM_FI_DEV_COMPUTE_MODE", "DCGM_FI_DEV_PERSISTENCE_MODE", "DCGM_FI_DEV_VIRTUAL_MODE"]
        csv, d2 = collectors("DCGM_FI_DEV_GPU_TEMP, gauge, t\n" + "".join("%s, label, l\n" % f for f in fields))
        ex = Exporter(path, ["--collect-interval", "200", "--kubernetes=false", "-f", csv])
        try:
            body = ex.wait_for(lambda b: len({l["gpu"] for l, _ in series(b, "DCGM_FI_DEV_GPU_TEMP")}) == 8,
                               what="8 GPUs")
            for l, _ in series(body, "DCGM_FI_DEV_GPU_TEMP"):
                g = doc["gpus"][int(l["gpu"])]
                want = {"DCGM_FI_NVML_VERSION": "12.550.54.15", "DCGM_FI_DEV_BRAND": "Tesla",
                        "DCGM_FI_DEV_NAME": "NVIDIA A100-SXM4-40GB", "DCGM_FI_DEV_UUID": g["uuid"],
                        "DCGM_FI_DEV_MINOR_NUMBER": str(g["minor"]), "DCGM_FI_DEV_PCI_BUSID": g["pci_bus_id"],
                        "DCGM_FI_DEV_OEM_INFOROM_VER": "2.0", "DCGM_FI_DEV_ECC_INFOROM_VER": "6.16",
                        "DCGM_FI_DEV_POWER_INFOROM_VER": "7.0", "DCGM_FI_CUDA_DRIVER_VERSION": "12040",
                        "DCGM_FI_DEV_COMPUTE_MODE": {"2": "2", "3": "1"}.get(l["gpu"], "0"),
                        "DCGM_FI_DEV_PERSISTENCE_MODE": "0" if l["gpu"] == "4" else "1",
                        "DCGM_FI_DEV_VIRTUAL_MODE": "0"}
                self.assertEqual({k: l.get(k) for k in want}, want, l)
            self.assertEqual(series(body, "gpulet_exporter_field_unavailable"), [])
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
        finally:
            ex.cleanup()


class HealthStatus(unittest.TestCase):
    """DCGM_EXP_GPU_HEALTH_STATUS as dcgm-exporter 4.8 serves it (gpu_health_collector.go): per GPU one series
    per health watch, labels health_watch and health_error_code, DCGM's result 0/10/20; gpulet runs the checks
    of DCGM's health module it has NVML inputs for (docs/reference/dcgm-exporter.md section 9). Before issue
    35 the field was listed as unavailable and no series was served."""

    WATCHES = ["PCIE", "NVLINK", "PMU", "MCU", "MEM", "SM", "INFOROM", "THERMAL", "POWER", "DRIVER", "ALL"]

    def test_verdicts_per_gpu_and_watch(self):
        doc = load("degraded")  # GPU 1: volatile DBE, a pending remap; GPU 2 lost
        doc["gpus"][0].setdefault("telemetry", {})["recovery_action"] = 1  # NVML: reset the GPU
        path, _ = with_fixture(doc)
        csv, _ = collectors("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"
                            "DCGM_EXP_GPU_HEALTH_STATUS, counter, DCGM reported health status\n")
        ex = Exporter(path, ["--collect-interval", "200", "--kubernetes=false", "-f", csv])
        try:
            def verdicts(b):
                return {(l["gpu"], l["health_watch"]): (l["health_error_code"], v)
                        for l, v in series(b, "DCGM_EXP_GPU_HEALTH_STATUS")}
            body = ex.wait_for(lambda b: len(verdicts(b)) == 33, what="3 GPUs x 11 watches")
            self.assertIn("# TYPE DCGM_EXP_GPU_HEALTH_STATUS counter", body)
            self.assertEqual(sorted({w for _, w in verdicts(body)}), sorted(self.WATCHES))
            got = verdicts(body)
            self.assertEqual(got[("0", "DRIVER")], ("DCGM_FR_GPU_RECOVERY_RESET", 20))
            self.assertEqual(got[("1", "MEM")], ("DCGM_FR_VOLATILE_DBE_DETECTED", 20))
            self.assertEqual(got[("2", "ALL")], ("DCGM_FR_FALLEN_OFF_BUS", 20))
            self.assertEqual(got[("0", "PCIE")], ("DCGM_FR_OK", 0))
            # XIDs seen since start, by DCGM's table: 38 a PCIe warning, 95 an uncontained error (ALL)
            ex.add_event("xid 0 38")
            ex.add_event("xid 1 95")
            body = ex.wait_for(lambda b: verdicts(b).get(("1", "ALL"), ("", 0))[1] == 20, what="XID 95")
            got = verdicts(body)
            self.assertEqual(got[("0", "PCIE")], ("DCGM_FR_XID_ERROR", 10))
            self.assertEqual(got[("1", "ALL")], ("DCGM_FR_UNCONTAINED_ERROR", 20))
            self.assertEqual(got[("0", "SM")], ("DCGM_FR_OK", 0))
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
        finally:
            ex.cleanup()


class HpcJobs(unittest.TestCase):
    """--hpc-job-mapping-dir as dcgm-exporter's hpc.go: files named by GPU index (or <gpu>.<GPU instance>) list
    job ids; each series of that device is served once per job with hpc_job, read again on every scrape.
    Before issue 35 the flag was warned about and no label was added."""

    def test_jobs_per_gpu_and_instance(self):
        root = temp_dir("gpulet-hpc-")
        jobs = os.path.join(root, "var/run/hpc")
        os.makedirs(jobs)
        with open(os.path.join(jobs, "0"), "w") as f:
            f.write("1001\n1002\n")
        with open(os.path.join(jobs, "6.9"), "w") as f:  # dgx-a100 GPU 6, GPU instance 9
            f.write("2001\n")
        with open(os.path.join(root, "secret"), "w") as f:
            f.write("root:x:0:0\n")
        os.symlink(os.path.join(root, "secret"), os.path.join(jobs, "1"))  # never followed
        ex = Exporter(fixture("dgx-a100"), ["--collect-interval", "200", "--kubernetes=false",
                                            "--hpc-job-mapping-dir", "/var/run/hpc"], root=root)
        try:
            def jobs_of(b):
                out = {}
                for l, _ in series(b, "DCGM_FI_DEV_GPU_TEMP"):
                    out.setdefault((l["gpu"], l.get("GPU_I_ID")), set()).add(l.get("hpc_job"))
                return out
            body = ex.wait_for(lambda b: len(jobs_of(b)) >= 8, what="GPU series")
            got = jobs_of(body)
            self.assertEqual(got[("0", None)], {"1001", "1002"})
            self.assertEqual(got[("6", "9")], {"2001"})
            self.assertEqual(got[("1", None)], {None})
            self.assertEqual(got[("6", "2")], {None})
            self.assertNotIn("root:x", body)
            with open(os.path.join(jobs, "2"), "w") as f:  # a new job: seen at the next scrape
                f.write("3001\n")
            body = ex.wait_for(lambda b: jobs_of(b).get(("2", None)) == {"3001"}, what="job of GPU 2")
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
        finally:
            ex.cleanup()

    def test_missing_dir_is_said_and_served_without(self):
        ex = Exporter(fixture("single-t4"), ["--kubernetes=false", "--hpc-job-mapping-dir", "/no/such/dir"])
        try:
            body = ex.wait_for(lambda b: series(b, "DCGM_FI_DEV_GPU_TEMP"), what="a series")
            self.assertNotIn("hpc_job", body)
            self.assertIn("HPC job mapping directory not readable", ex.text())
        finally:
            ex.cleanup()


class Numbers(unittest.TestCase):
    def test_framebuffer_in_whole_mib(self):
        """A real H200 reserves 615.06 MiB; DCGM's int64 says 615 (and no value is in exponent form)."""
        doc = load("single-t4")
        doc["models"]["tesla-t4"]["telemetry"]["memory_reserved_mib"] = 615.0625
        doc["models"]["tesla-t4"]["telemetry"]["memory_used_mib"] = 4321
        path, d = with_fixture(doc)
        ex = Exporter(path, ["--collect-interval", "200", "--kubernetes=false"])
        try:
            body = ex.wait_for(lambda b: "DCGM_FI_DEV_FB_RESERVED{" in b, what="FB sample")
            lines = [l for l in body.splitlines() if l.startswith("DCGM_FI_DEV_FB_")]
            self.assertEqual(len(lines), 4, lines)
            for line in lines:
                self.assertRegex(line, r"\} \d+$")
            self.assertEqual([v for _, v in series(body, "DCGM_FI_DEV_FB_RESERVED")], [615])
            # not in the built-in set; with a file listing it: used / (total - reserved) in whole MiB
            self.assertNotIn("DCGM_FI_DEV_FB_USED_PERCENT", body)
            total = series(body, "DCGM_FI_DEV_FB_TOTAL")[0][1]
            free = series(body, "DCGM_FI_DEV_FB_FREE")[0][1]
            used = series(body, "DCGM_FI_DEV_FB_USED")[0][1]
            self.assertLessEqual(free + used + 615, total)
            for line in body.splitlines():
                if line.startswith("DCGM_FI_DEV_") and "POWER_USAGE" not in line:
                    self.assertRegex(line, r"\} \d+$")
        finally:
            ex.cleanup()
        csv, d2 = collectors("DCGM_FI_DEV_FB_USED, gauge, u\nDCGM_FI_DEV_FB_USED_PERCENT, gauge, p\n")
        ex = Exporter(path, ["--collect-interval", "200", "--kubernetes=false", "-f", csv])
        try:
            body = ex.wait_for(lambda b: "DCGM_FI_DEV_FB_USED_PERCENT{" in b, what="FB ratio")
            used = series(body, "DCGM_FI_DEV_FB_USED")[0][1]
            ratio = series(body, "DCGM_FI_DEV_FB_USED_PERCENT")[0][1]
            self.assertAlmostEqual(ratio, used / (15360 - 615), places=6)
            self.assertTrue(0 < ratio < 1, ratio)
        finally:
            ex.cleanup()


class Devices(unittest.TestCase):
    def test_device_is_nvidia_index_and_lost_at_start_has_no_empty_labels(self):
        """device is nvidia<gpu index> as dcgm-exporter writes it, whatever the /dev minor; a GPU lost
        before start has no UUID="" or pci_bus_id="" and no DCGM_FI_DEV_* series."""
        doc = load("degraded")
        for i, g in enumerate(doc["gpus"]):
            g["minor"] = 7 - i  # minors in reverse order: device must still follow the index
        path, d = with_fixture(doc)
        ex = Exporter(path, ["--collect-interval", "200", "--kubernetes=false"])
        try:
            body = ex.wait_for(lambda b: len(series(b, "DCGM_FI_DEV_GPU_TEMP")) == 2, what="2 GPUs sampled")
            for line in body.splitlines():
                if line.startswith("#"):
                    continue
                self.assertNotIn('UUID=""', line)
                self.assertNotIn('pci_bus_id=""', line)
                m = re.search(r'\{gpu="(\d+)".*device="nvidia(\d+)"', line)
                if m:
                    self.assertEqual(m.group(1), m.group(2), line)
            healthy = series(body, "gpulet_gpu_healthy")
            self.assertEqual(sorted(l["device"] for l, _ in healthy), ["nvidia0", "nvidia1", "nvidia2"])
            self.assertEqual([v for l, v in healthy if l["gpu"] == "2"], [0])
            for line in body.splitlines():
                if line.startswith("DCGM_FI_DEV_"):
                    self.assertNotIn('gpu="2"', line)
            self.assertEqual(sorted(l["gpu"] for l, _ in series(body, "DCGM_FI_DEV_XID_ERRORS")), ["0", "1"])
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
        finally:
            ex.cleanup()

    def test_gpu_lost_while_running_serves_no_dcgm_series(self):
        ex = Exporter(fixture("dgx-h100"), ["--collect-interval", "200", "--kubernetes=false"])
        try:
            ex.wait_for(lambda b: len(series(b, "DCGM_FI_DEV_GPU_TEMP")) == 8, what="8 GPUs sampled")
            doc = load("dgx-h100")
            lost = doc["gpus"][2]["uuid"]
            doc["gpus"][2]["lost"] = True
            write_json_atomic(ex.fixture, doc)
            body = ex.wait_for(lambda b: any(l["UUID"] == lost and v == 0 for l, v in
                                             series(b, "gpulet_gpu_healthy")), what="lost GPU unhealthy")
            body = ex.scrape()
            dcgm = [l for l in body.splitlines() if l.startswith("DCGM_FI_DEV_") and lost in l]
            self.assertEqual(dcgm, [])
            self.assertEqual(len(series(body, "DCGM_FI_DEV_XID_ERRORS")), 7)
        finally:
            ex.cleanup()


class Upstream(unittest.TestCase):
    def test_health_body_is_ok(self):
        ex = Exporter(fixture("single-t4"), ["--kubernetes=false"])
        try:
            ex.wait_for(lambda b: "\ngpulet_exporter_ready 1\n" in b, what="ready")
            status, _, body = ex.get("/health")
            self.assertEqual((status, body), (200, "OK"))
            status, _, body = ex.get("/healthz")
            self.assertEqual((status, body), (200, "ok\n"))
        finally:
            ex.cleanup()

    def test_old_namespace_labels(self):
        """-o as dcgm-exporter: the label uuid, and pod_name/pod_namespace/container_name."""
        doc = load("dgx-a100")
        g0 = doc["gpus"][0]["uuid"]
        root = tempfile.mkdtemp(prefix="gpulet-root-")
        sock = os.path.join(root, "var/lib/kubelet/pod-resources/kubelet.sock")
        pr = PodResources(sock, [{"name": "train-0", "namespace": "ml", "containers": [
            {"name": "worker", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": [g0]}]}]}])
        ex = None
        try:
            ex = Exporter(fixture("dgx-a100"), ["--collect-interval", "200", "--pod-resources-interval", "200",
                                                "-k", "-o"], root=root)
            body = ex.wait_for(lambda b: any(l.get("pod_name") == "train-0"
                                             for l, _ in series(b, "DCGM_FI_DEV_GPU_TEMP")), what="attribution")
            temps = series(body, "DCGM_FI_DEV_GPU_TEMP")
            self.assertTrue(all("uuid" in l and "UUID" not in l for l, _ in temps))
            held = [l for l, _ in temps if l["uuid"] == g0]
            self.assertEqual([(l["pod_name"], l["pod_namespace"], l["container_name"]) for l in held],
                             [("train-0", "ml", "worker")])
            self.assertNotIn('pod="', body)
            self.assertNotIn("use-old-namespace", ex.text())  # no "has no effect" warning
            rc, out = promcheck(body)
            self.assertEqual(rc, 0, out)
        finally:
            if ex:
                ex.cleanup()
            pr.stop()
            shutil.rmtree(root, ignore_errors=True)


class Attribution(unittest.TestCase):
    """Pod attribution as dcgm-exporter's: off unless asked (-k), GKE's nvidiaN ids with
    --kubernetes-gpu-id-type device-name, a time-sliced GPU given to one of its pods."""

    def run_exporter(self, pods, args):
        root = tempfile.mkdtemp(prefix="gpulet-root-")
        sock = os.path.join(root, "var/lib/kubelet/pod-resources/kubelet.sock")
        pr = PodResources(sock, pods)
        try:
            ex = Exporter(fixture("dgx-h100"), ["--collect-interval", "200", "--pod-resources-interval", "200"] + args,
                          root=root)
        except BaseException:
            pr.stop()
            raise
        self.addCleanup(shutil.rmtree, root, True)
        self.addCleanup(pr.stop)
        self.addCleanup(ex.cleanup)
        return ex

    @staticmethod
    def held(body):
        return sorted((l["gpu"], l["pod"], l.get("vgpu")) for l, _ in series(body, "DCGM_FI_DEV_GPU_TEMP") if "pod" in l)

    def test_off_by_default(self):
        doc = load("dgx-h100")
        pods = [{"name": "a", "namespace": "ml", "containers": [
            {"name": "c", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": [doc["gpus"][0]["uuid"]]}]}]}]
        ex = self.run_exporter(pods, [])
        body = ex.wait_for(lambda b: len(series(b, "DCGM_FI_DEV_GPU_TEMP")) == 8, what="8 GPUs")
        time.sleep(0.5)
        body = ex.scrape()
        self.assertEqual(self.held(body), [])
        self.assertNotIn("gpulet_pod_gpu_allocated{", body)
        self.assertIn("kubernetes=false", ex.text())

    def test_gke_device_names(self):
        pods = [{"name": "whole", "namespace": "ml", "containers": [
                    {"name": "c", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": ["nvidia3"]}]}]},
                {"name": "ts-a", "namespace": "ml", "containers": [
                    {"name": "c", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": ["nvidia5/vgpu0"]}]}]},
                {"name": "ts-b", "namespace": "ml", "containers": [
                    {"name": "c", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": ["nvidia5/vgpu1"]}]}]}]
        ex = self.run_exporter(pods, ["-k", "--kubernetes-gpu-id-type", "device-name"])
        body = ex.wait_for(lambda b: len(self.held(b)) == 2, what="GKE attribution")
        # the time-sliced GPU goes to one of its pods by default, as upstream (the highest replica)
        self.assertEqual(self.held(body), [("3", "whole", None), ("5", "ts-b", None)])
        self.assertNotIn("flag=--kubernetes-gpu-id-type", ex.text())
        rc, out = promcheck(body)
        self.assertEqual(rc, 0, out)

    def test_uid_type_does_not_match_device_names(self):
        pods = [{"name": "whole", "namespace": "ml", "containers": [
            {"name": "c", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": ["nvidia3"]}]}]}]
        ex = self.run_exporter(pods, ["-k"])
        body = ex.wait_for(lambda b: "gpulet_podresources" in b and len(series(b, "DCGM_FI_DEV_GPU_TEMP")) == 8,
                           what="8 GPUs")
        self.assertEqual(self.held(body), [])

    def test_bad_gpu_id_type_is_refused(self):
        from exporter_lib import FAKE, GPULET
        p = subprocess.run([GPULET, "exporter", "--nvml-library", FAKE, "--kubernetes-gpu-id-type", "index",
                            "--address", "127.0.0.1:0"], capture_output=True, text=True, timeout=20,
                           env=dict(os.environ, FAKE_NVML_FIXTURE=fixture("single-t4")))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--kubernetes-gpu-id-type 'index'", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
