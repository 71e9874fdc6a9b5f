#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The doctor as a DaemonSet: `gpulet doctor --serve-metrics` on several scenario nodes (healthy and broken).
Checks, with real peers where there is one:
- promtool check metrics accepts what every node serves;
- the root cause each node serves is the one the readable report of `gpulet doctor` names, and comes first;
- a change under the node root (the CDI spec removed) is re-checked within the delay, without waiting
  for the interval; the interval re-checks on its own;
- promtool test rules: GpuNodeRootCause fires for each broken node with the id, summary and fix it served,
  and not for the healthy one; GpuDoctorStale fires when the walks stop;
- HTTP as the exporter's (one server): scrapes reuse one keep-alive connection, and a POST gets 405 with Allow;
- the page at / names the same root cause;
- SIGTERM stops it with status 0.
Env GPULET, FAKE_NVML_LIB, GPULET_SRC."""
import http.client, json, os, re, shutil, signal, subprocess, sys, tempfile, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as scen  # noqa: E402  (the scenario nodes)

NODES = {  # scenario -> the root cause its readable report names (None: healthy)
    "healthy-dgx-a100": None,
    "driver-not-loaded": "driver.not-loaded",
    "cdi-spec-missing": "cdi.spec-missing",
    "runtime-cdi-disabled": None,  # read from the report below
}
failures = []


def check(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def series(text, name):
    """[(labels dict, value)] of one metric in a text exposition."""
    out = []
    for line in text.splitlines():
        m = re.match(rf'{name}\{{(.*)\}} (\S+)$', line)
        if m:
            labels = dict((k, v.encode().decode("unicode_escape"))
                          for k, v in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1)))
            out.append((labels, float(m.group(2))))
    return out


def report_root_cause(root, nvml):
    p = subprocess.run([scen.GPULET, "doctor", "--root", root, "--nvml-library", scen.FAKE],
                       env=dict(os.environ, FAKE_NVML_FIXTURE=nvml), capture_output=True, text=True)
    m = re.search(r"^Root cause: (\S+)", p.stdout, re.M)
    return m.group(1) if m else None


class Doctor:
    def __init__(self, name, root, nvml, *args):
        self.err = open(os.path.join(os.path.dirname(root), "doctor.log"), "w+")
        self.p = subprocess.Popen([scen.GPULET, "doctor", "--root", root, "--nvml-library", scen.FAKE,
                                   "--serve-metrics", "127.0.0.1:0", "--node-name", name, *args],
                                  env=dict(os.environ, FAKE_NVML_FIXTURE=nvml), stdout=subprocess.DEVNULL,
                                  stderr=self.err)
        self.port = None
        for _ in range(200):
            self.err.seek(0)
            m = re.search(r'msg="Serving doctor metrics" .*port=(\d+)', self.err.read())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.05)
        assert self.port, f"{name}: no listen line: {self.log()}"
        for _ in range(200):
            if get(self.port, "/healthz")[0] == 200:
                break
            time.sleep(0.05)

    def log(self):
        self.err.seek(0)
        return self.err.read()[-2000:]

    def metrics(self):
        return get(self.port, "/metrics")[1]

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return None


def wait_for(pred, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


def promtool_case(served, rules_file, tmp):
    """A promtool test: each node's served root cause and last-run series, held for 20 minutes."""
    inputs, expect = [], []
    for name, text in served.items():
        for labels, _ in series(text, "gpulet_doctor_root_cause"):
            sel = ",".join(f'{k}={json.dumps(v)}' for k, v in sorted(labels.items()))
            inputs.append({"series": f"gpulet_doctor_root_cause{{{sel}}}", "values": "1x20"})
            expect.append({"exp_labels": dict(labels, severity="critical"), "exp_annotations": {
                "summary": f"GPU node {name} is broken at the {labels['component']} link: {labels['id']}",
                "description": labels["summary"], "fix": labels["fix"],
                "runbook": f"Run `gpulet doctor --only {labels['component']}` on node {name} for the evidence, "
                           "and fix this root cause first: the other findings on the node often follow from it."}})
    # a node whose walks stopped 2 hours ago (interval 300 s): stale; a fresh one is not
    inputs += [{"series": 'gpulet_doctor_last_run_timestamp_seconds{node="stuck"}', "values": "0x40"},
               {"series": 'gpulet_doctor_interval_seconds{node="stuck"}', "values": "300x40"},
               {"series": 'gpulet_doctor_last_run_timestamp_seconds{node="fresh"}', "values": "0+60x40"},
               {"series": 'gpulet_doctor_interval_seconds{node="fresh"}', "values": "300x40"}]
    test = {"rule_files": [rules_file], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": [
            {"eval_time": "3m", "alertname": "GpuNodeRootCause", "exp_alerts": []},  # for: 5m
            {"eval_time": "10m", "alertname": "GpuNodeRootCause", "exp_alerts": expect},
            {"eval_time": "12m", "alertname": "GpuDoctorStale", "exp_alerts": []},  # 15 min stale, for: 10m
            {"eval_time": "30m", "alertname": "GpuDoctorStale", "exp_alerts": [
                {"exp_labels": {"node": "stuck", "severity": "warning"}, "exp_annotations": {
                    "summary": "gpulet doctor has not checked GPU node stuck for 30m 0s",
                    "description": "The doctor's walks are stuck (a hung host tool or kubelet socket); "
                                   "its findings are old.",
                    "runbook": "Look at the doctor pod's log on the node; run `gpulet doctor` by hand there to "
                               "see which check hangs."}}]}]}]}
    path = os.path.join(tmp, "doctor.test.json")
    json.dump(test, open(path, "w"), indent=1)
    return path, len(expect)


def rules_file(tmp):
    import yaml
    doc = yaml.safe_load(open(os.path.join(scen.SRC, "deploy", "prometheus-rules.yaml")))
    path = os.path.join(tmp, "rules.yaml")
    yaml.safe_dump(doc["spec"], open(path, "w"), sort_keys=False)
    return path


def http_checks(port):
    """The server both daemons use: keep-alive between scrapes, 405 with Allow."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/metrics")
    r = c.getresponse()
    r.read()
    close = (r.getheader("Connection") or "").lower() == "close"
    sock = c.sock
    c.request("GET", "/healthz")
    r2 = c.getresponse()
    r2.read()
    check(r.status == 200 and not close and r2.status == 200 and c.sock is sock,
          f"two scrapes on one keep-alive connection (Connection: {r.getheader('Connection')})")
    c.request("POST", "/metrics", body=b"x")
    r = c.getresponse()
    r.read()
    check(r.status == 405 and r.getheader("Allow") == "GET, HEAD", f"POST: {r.status}, Allow: {r.getheader('Allow')}")
    c.close()


def main():
    tmp = tempfile.mkdtemp(prefix="doctor-serve-")
    doctors = {}
    try:
        nodes = {}
        for name, want in NODES.items():
            d = os.path.join(tmp, name)
            os.makedirs(d)
            root, nvml, _ = scen.build_node(name, d)
            nodes[name] = (root, nvml, want or report_root_cause(root, nvml))
            doctors[name] = Doctor(name, root, nvml, "--interval", "3600", "--recheck-delay", "1")
        served = {n: doc.metrics() for n, doc in doctors.items()}
        for name, text in served.items():
            pc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
            check(pc.returncode == 0, f"{name}: promtool check metrics accepts it {pc.stdout}{pc.stderr}".strip())
            want = nodes[name][2]
            rc = series(text, "gpulet_doctor_root_cause")
            got = [labels["id"] for labels, _ in rc]
            check(got == ([want] if want else []), f"{name}: root cause served {got}, report says {want}")
            findings = series(text, "gpulet_doctor_finding")
            first = [l["id"] for l, _ in findings if l["rank"] == "0"]
            check(first == ([want] if want else []) or (not want and all(l["severity"] == "warn"
                                                                         for l, _ in findings)),
                  f"{name}: rank 0 is the root cause ({first})")
            check(all(l["node"] == name for l, _ in findings + rc), f"{name}: every series has node={name}")
            if want:
                check(rc[0][0]["fix"] != "" and rc[0][0]["summary"] != "", f"{name}: root cause has summary and fix")
            # the same walk as a page at / (doctor/html.h): the same root cause, the node's name
            status, page = get(doctors[name].port, "/")
            cause = re.search(r"<h2>Root cause: (\S+) ", page)
            check(status == 200 and page.startswith("<!DOCTYPE html>") and f"gpulet doctor: {name}<" in page and
                  (cause.group(1) if cause else None) == want, f"{name}: / serves the page of the walk ({status})")
        http_checks(doctors["healthy-dgx-a100"].port)
        # a change: the healthy node's plugin goes away; re-checked after ~1 s, not after the hour
        root, nvml, _ = nodes["healthy-dgx-a100"]
        dp = os.path.join(root, "var/lib/kubelet/device-plugins")
        for sock in [n for n in os.listdir(dp) if n.startswith("nvidia-")]:
            os.unlink(os.path.join(dp, sock))
        t0 = time.monotonic()
        want = report_root_cause(root, nvml)
        check(want == "plugin.not-registered", f"the report names the plugin once its socket is gone ({want})")
        ok = wait_for(lambda: [l["id"] for l, _ in series(doctors["healthy-dgx-a100"].metrics(),
                                                           "gpulet_doctor_root_cause")] == [want], 15)
        check(ok and time.monotonic() - t0 < 10, f"a removed plugin socket is re-checked on change ({time.monotonic() - t0:.1f} s)")
        runs = {l["trigger"]: v for l, v in series(doctors["healthy-dgx-a100"].metrics(), "gpulet_doctor_runs_total")}
        check(runs.get("change") == 1 and runs.get("start") == 1 and runs.get("interval") == 0,
              f"runs by trigger {runs}")
        # the interval on its own
        root, nvml, _ = nodes["cdi-spec-missing"]
        fast = Doctor("interval", root, nvml, "--interval", "1")
        ok = wait_for(lambda: any(l["trigger"] == "interval" and v >= 2 for l, v in
                                  series(fast.metrics(), "gpulet_doctor_runs_total")), 10)
        check(ok, "--interval 1 re-checks every second")
        check(fast.stop() == 0, "SIGTERM: exit status 0")
        # the alerts, judged by promtool on what the nodes served
        path, n = promtool_case(served, rules_file(tmp), tmp)
        check(n == sum(1 for v in nodes.values() if v[2]), f"{n} broken nodes in the alert test")
        pt = subprocess.run(["promtool", "test", "rules", path], capture_output=True, text=True)
        check(pt.returncode == 0, f"promtool test rules on the served root causes\n{pt.stdout}{pt.stderr}")
        for name, doc in doctors.items():
            check(doc.stop() == 0, f"{name}: SIGTERM -> exit 0")
        doctors.clear()
    finally:
        for doc in doctors.values():
            doc.p.kill()
            if failures:
                print(doc.log())
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
