# SPDX-License-Identifier: Apache-2.0
"""The chart's exporter knobs (issue 24 item 6): exporter.collectors becomes a ConfigMap, mounted
read-only and passed with -f; the file the chart renders starts the exporter and serves its fields.
exporter.tlsServerConfig / exporter.basicAuth (dcgm-exporter's chart keys) become a web config Secret
passed with --web-config-file, probes that can pass it, and a ServiceMonitor that scrapes through it:
checked by starting the exporter on the rendered files and scraping it with curl exactly as the
rendered ServiceMonitor says (CA, server name, client certificate, user and password from the
rendered Secrets). doctor.tlsServerConfig / doctor.basicAuth do the same for `gpulet doctor
--serve-metrics` (issue 30 item 8), checked the same way. The ServiceMonitor copies
pod/namespace/container to dcgm-exporter's exported_*."""
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helm_lib  # noqa: E402
from exporter_lib import Doctor, Exporter, fixture, series  # noqa: E402

CSV = ("# a user's list\n"
       "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
       "DCGM_FI_DEV_POWER_VIOLATION, counter, Throttling duration due to power constraints (in ns).\n"
       "DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.\n")


def render(values, fails=False):
    helm, _ = helm_lib.fetch()
    d = tempfile.mkdtemp(prefix="gpulet-chart-")
    try:
        vf = os.path.join(d, "values.yaml")
        with open(vf, "w") as f:
            yaml.safe_dump(values, f)
        p = helm_lib.run([helm, "template", "t", helm_lib.CHART, "--values", vf])
        if fails:
            assert p.returncode != 0, "rendered"
            return p.stderr
        assert p.returncode == 0, p.stderr
        return [o for o in yaml.safe_load_all(p.stdout) if o]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def obj(objs, kind, name):
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)


def secret_files(secret):
    """A Secret's files as kubelet writes them into the volume."""
    out = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
    out.update({k: v.encode() for k, v in (secret.get("stringData") or {}).items()})
    return out


def curl(url, *args):
    p = subprocess.run(["curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", url] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


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


class WebConfig(unittest.TestCase):
    def container(self, objs, component):
        ds = obj(objs, "DaemonSet", "t-gpulet-" + component)
        return ds["spec"]["template"]["spec"], ds["spec"]["template"]["spec"]["containers"][0]

    def exporter_container(self, objs):
        return self.container(objs, "exporter")

    def test_default_has_no_web_config(self):
        objs = render({"metrics": {"serviceMonitor": {"enabled": True}}})
        pod, c = self.exporter_container(objs)
        self.assertFalse([a for a in c["args"] if a.startswith("--web-config-file")])
        self.assertFalse([o for o in objs if o["kind"] == "Secret" and "exporter" in o["metadata"]["name"]])
        self.assertEqual(c["readinessProbe"]["httpGet"], {"path": "/healthz", "port": "metrics"})
        ep = obj(objs, "ServiceMonitor", "t-gpulet-exporter")["spec"]["endpoints"][0]
        self.assertNotIn("scheme", ep)
        self.assertNotIn("basicAuth", ep)

    def test_https_probes(self):
        objs = render({"exporter": {"tlsServerConfig": {"enabled": True}}})
        pod, c = self.exporter_container(objs)
        self.assertIn("--web-config-file=/etc/gpulet/web/web-config.yml", c["args"])
        self.assertEqual(c["readinessProbe"]["httpGet"], {"path": "/healthz", "port": "metrics", "scheme": "HTTPS"})
        self.assertEqual(c["livenessProbe"]["httpGet"]["scheme"], "HTTPS")
        ann = obj(objs, "DaemonSet", "t-gpulet-exporter")["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(ann["prometheus.io/scheme"], "https")

    def test_own_certificate_without_ca_needs_servicemonitor_tls_config(self):
        err = render({"exporter": {"tlsServerConfig": {"enabled": True, "autoGenerated": False, "cert": "C",
                                                       "key": "K"}},
                      "metrics": {"serviceMonitor": {"enabled": True}}}, fails=True)
        self.assertIn("metrics.serviceMonitor.tlsConfig is required", err)
        objs = render({"exporter": {"tlsServerConfig": {"enabled": True, "autoGenerated": False, "cert": "C",
                                                        "key": "K"}},
                       "metrics": {"serviceMonitor": {"enabled": True, "tlsConfig": {"insecureSkipVerify": True}}}})
        ep = obj(objs, "ServiceMonitor", "t-gpulet-exporter")["spec"]["endpoints"][0]
        self.assertEqual(ep["tlsConfig"], {"insecureSkipVerify": True})

    def test_servicemonitor_scrapes_through_the_rendered_web_config(self):
        """TLS (generated CA), client certificates and basic auth at once: the exporter started on the
        rendered web config and certificate refuses what the ServiceMonitor does not send and
        answers the ServiceMonitor's scrape; the probes do not need what kubelet does not have."""
        self.scrape_through_rendered("exporter")

    def test_doctor_servicemonitor_scrapes_through_the_rendered_web_config(self):
        """The same for the doctor's endpoint: doctor.tlsServerConfig and doctor.basicAuth."""
        self.scrape_through_rendered("doctor")

    def scrape_through_rendered(self, component):
        objs = render({component: {"tlsServerConfig": {"enabled": True,
                                                       "clientAuthType": "RequireAndVerifyClientCert"},
                                   "basicAuth": {"users": {"prom": "s3cret", "zed": "other"}}},
                       "metrics": {"serviceMonitor": {"enabled": True}}})
        pod, c = self.container(objs, component)
        self.assertEqual(c["readinessProbe"]["tcpSocket"], {"port": "metrics"})
        self.assertEqual(c["livenessProbe"]["tcpSocket"], {"port": "metrics"})
        ann = obj(objs, "DaemonSet", "t-gpulet-" + component)["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(ann["prometheus.io/scheme"], "https")
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        vols = {v["name"]: v for v in pod["volumes"]}
        d = tempfile.mkdtemp(prefix="gpulet-webcfg-")
        self.addCleanup(shutil.rmtree, d, True)
        # the Secret volumes as kubelet writes them, below d instead of /
        for path, name in mounts.items():
            if "secret" not in vols[name]:
                continue
            files = secret_files(obj(objs, "Secret", vols[name]["secret"]["secretName"]))
            os.makedirs(d + path)
            for f, content in files.items():
                with open(os.path.join(d + path, f), "wb") as out:
                    out.write(content)
        arg = next(a for a in c["args"] if a.startswith("--web-config-file="))
        cfg = d + arg.split("=", 1)[1]
        with open(cfg) as f:
            text = f.read()
        self.assertIn("/etc/gpulet/tls/tls.crt", text)
        with open(cfg, "w") as f:  # the file's absolute paths, below d as the mounts are
            f.write(text.replace("/etc/gpulet/", d + "/etc/gpulet/"))
        if component == "exporter":
            server = Exporter(fixture("dgx-h100"), ["--kubernetes=false", "--web-config-file", cfg])
        else:
            server = Doctor(d, ["--web-config-file", cfg], "dgx-h100")
            self.assertTrue(server.port, server.text())
        self.addCleanup(server.cleanup)

        ep = obj(objs, "ServiceMonitor", "t-gpulet-" + component)["spec"]["endpoints"][0]
        self.assertEqual(ep["scheme"], "https")
        tls = ep["tlsConfig"]

        def secret_key(ref):
            return secret_files(obj(objs, "Secret", ref["name"]))[ref["key"]]

        def save(name, ref):
            path = os.path.join(d, name)
            with open(path, "wb") as f:
                f.write(secret_key(ref))
            return path
        ca, cert, key = save("sm-ca", tls["ca"]["secret"]), save("sm-cert", tls["cert"]["secret"]), \
            save("sm-key", tls["keySecret"])
        user, password = secret_key(ep["basicAuth"]["username"]).decode(), \
            secret_key(ep["basicAuth"]["password"]).decode()
        self.assertEqual((user, password), ("prom", "s3cret"))
        host = tls["serverName"]
        self.assertEqual(host, "t-gpulet-" + component)
        url = "https://%s:%d/metrics" % (host, server.port)
        resolve = ["--resolve", "%s:%d:127.0.0.1" % (host, server.port)]
        as_sm = resolve + ["--cacert", ca, "--cert", cert, "--key", key, "-u", "%s:%s" % (user, password)]
        deadline = time.monotonic() + 30
        rc, code, err = curl(url, *as_sm)
        while code == "503" and time.monotonic() < deadline:  # the doctor's first walk
            time.sleep(0.2)
            rc, code, err = curl(url, *as_sm)
        self.assertEqual((rc, code), (0, "200"), err)
        rc, code, _ = curl(url, *as_sm[:-2])  # no password
        self.assertEqual(code, "401")
        rc, code, _ = curl(url, *as_sm[:-2], "-u", "zed:other")  # the other user of the values
        self.assertEqual(code, "200")
        rc, code, _ = curl(url, *resolve, "--cacert", ca, "-u", "prom:s3cret")  # no client certificate
        self.assertNotEqual(code, "200")
        rc, code, _ = curl("http://127.0.0.1:%d/metrics" % server.port)  # plain HTTP
        self.assertNotEqual(code, "200")

    def test_servicemonitor_copies_labels_to_exported_names(self):
        ep = obj(render({"metrics": {"serviceMonitor": {"enabled": True}}}), "ServiceMonitor",
                 "t-gpulet-exporter")["spec"]["endpoints"][0]
        self.assertEqual([(r["sourceLabels"], r["targetLabel"]) for r in ep["metricRelabelings"]],
                         [(["pod"], "exported_pod"), (["namespace"], "exported_namespace"),
                          (["container"], "exported_container")])
        ep = obj(render({"metrics": {"serviceMonitor": {"enabled": True, "exportedLabels": False}}}),
                 "ServiceMonitor", "t-gpulet-exporter")["spec"]["endpoints"][0]
        self.assertNotIn("metricRelabelings", ep)


if __name__ == "__main__":
    unittest.main(verbosity=2)
