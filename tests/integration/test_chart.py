#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The Helm chart deploy/helm/gpulet as a cluster admin coming from NVIDIA's chart meets it, judged by
the real helm v4 (template, lint, the values schema) on Kubernetes 1.26, 1.29, 1.31 and 1.33:

- the `nvidia` RuntimeClass: not rendered by default (nor in the kustomize base), kept on uninstall
  when asked for (helm.sh/resource-policy: keep);
- values that fail loudly: values.schema.json refuses a typo in an enum or a wrong type, the
  defaults pass; extraArgs/extraEnv/extraVolumes/extraVolumeMounts reach each DaemonSet; resources
  can be unset; `helm test` has a pod; the chart has a README; no render has a whitespace-only line;
- no NFD needed: a scheduling mode on nvidia.com/gpu.present (the label `gpulet labels` writes);
- several configs in config.map need an explicit one-config-per-release value; config edits roll the
  pods (checksum annotation);
- the DaemonSets run on the image's architectures, amd64 and arm64, and only there."""
import json
import os
import shutil
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helm_lib  # noqa: E402
from helm_lib import BASE, CHART, find, run  # noqa: E402

FAILS = []
KUBES = ("1.26.0", "1.29.0", "1.31.0", "1.33.0")


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg)
    return cond


def template_err(values=None, sets=(), kube=helm_lib.BASE_KUBE):
    """(docs, None) when the render succeeds, (None, stderr) when it fails."""
    try:
        return helm_lib.template(values=values, sets=sets, kube_version=kube), None
    except RuntimeError as e:
        return None, str(e)


def daemonsets(docs):
    return {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in docs if d["kind"] == "DaemonSet"}


def test_runtimeclass():
    for kube in KUBES:
        docs = helm_lib.template(kube_version=kube)
        check(not [d for d in docs if d["kind"] == "RuntimeClass"],
              "kube %s: the default render has a RuntimeClass (it would take over the GPU Operator's)" % kube)
    check(not [d for d in helm_lib.load_base() if d["kind"] == "RuntimeClass"], "the kustomize base has a RuntimeClass")
    docs = helm_lib.template(values={"runtimeClass": {"create": True}})
    rc = find(docs, "RuntimeClass")
    check(rc["metadata"].get("annotations", {}).get("helm.sh/resource-policy") == "keep",
          "runtimeClass.create: no helm.sh/resource-policy: keep: %r" % rc["metadata"])


def test_schema():
    """values.schema.json: each upstream enum refuses a typo, wrong types fail, the defaults and the
    CI values pass, on every Kubernetes version."""
    for kube in KUBES:
        docs, err = template_err(kube=kube)
        check(err is None, "kube %s: the defaults fail: %s" % (kube, err))
    helm, _ = helm_lib.fetch()
    p = run([helm, "template", "x", CHART, "--set", "migStrategy=mixd"])
    check(p.returncode != 0 and "migStrategy" in p.stderr and "mixed" in p.stderr,
          "helm template --set migStrategy=mixd: rc %d %s" % (p.returncode, p.stderr.strip()[:300]))
    p = run([helm, "lint", "--strict", CHART, "--set", "deviceIDStrategy=uid"])
    check(p.returncode != 0, "helm lint --set deviceIDStrategy=uid passed")
    bad = [{"migStrategy": "mixd"}, {"deviceIDStrategy": "uid"}, {"deviceDiscoveryStrategy": "tegr"},
           {"deviceListStrategy": "cdi"}, {"deviceListStrategy": "envvar,cdi"}, {"image": {"pullPolicy": "always"}},
           {"updateStrategy": {"type": "Rolling"}}, {"gpuNodeSelection": "nfd"}, {"nodeArchitectures": ["x86_64"]},
           {"failOnInitError": "false"}, {"compatWithCPUManager": "yes"}, {"exporter": {"port": "9400"}},
           {"doctor": {"interval": "5m"}}, {"runtimeClass": {"create": "true"}}, {"resources": "64Mi"},
           {"devicePlugin": {"extraArgs": "--x"}}, {"gfd": {"sleepInterval": "60"}},
           {"cdi": {"nvidiaHookPath": "nvidia-cdi-hook"}},
           {"nvidiaDriverRoot": "run/nvidia/driver"}, {"config": {"oneConfigPerRelease": "yes"}},
           {"exporter": {"tlsServerConfig": {"clientAuthType": "RequireAndVerify"}}},
           {"exporter": {"basicAuth": {"users": {"prom": 1}}}}]
    for values in bad:
        _, err = template_err(values)
        check(err is not None and "schema" in err, "the schema accepts %r (%s)" % (values, err))
    good = [{"migStrategy": "mixed"}, {"migStrategy": None}, {"deviceListStrategy": "envvar,cdi-annotations"},
            {"deviceListStrategy": None}, {"gfd": {"enabled": True, "sleepInterval": "1m30s"}},
            {"resources": None}, {"resources": {}}, {"exporter": {"resources": None}}, {"affinity": None},
            {"nodeArchitectures": []}, {"nodeArchitectures": None},
            # an upstream values file's keys gpulet does not use pass (docs/reference/helm-chart.md)
            {"allowDefaultNamespace": True, "nfd": {"enabled": True}, "mps": {"enableHostPID": False}}]
    for values in good:
        _, err = template_err(values)
        check(err is None, "the schema refuses %r: %s" % (values, err))


def test_extras_and_resources():
    names = {"device-plugin": "devicePlugin", "gpu-feature-discovery": "gfd", "exporter": "exporter",
             "doctor": "doctor", "mps-control-daemon": "mps"}
    values = {"gfd": {"enabled": True}}
    for key in names.values():
        values.setdefault(key, {}).update({
            "extraArgs": ["--x-%s" % key], "extraEnv": [{"name": "X_%s" % key.upper(), "value": "1"}],
            "extraVolumes": [{"name": "x-%s" % key.lower(), "emptyDir": {}}],
            "extraVolumeMounts": [{"name": "x-%s" % key.lower(), "mountPath": "/x"}]})
    # null removes a default (helm merges a {} with the chart's map, so {} keeps it: values.yaml says so)
    values.update({"resources": None, "gfd": dict(values["gfd"], resources=None),
                   "exporter": dict(values["exporter"], resources=None),
                   "doctor": dict(values["doctor"], resources=None)})
    for kube in KUBES:
        ds = daemonsets(helm_lib.template(values=values, kube_version=kube))
        check(set(ds) == set(names), "kube %s: DaemonSets %s" % (kube, sorted(ds)))
        for comp, key in names.items():
            if comp not in ds:
                continue
            pod = ds[comp]["spec"]["template"]["spec"]
            c = pod["containers"][0]
            check(c.get("args", [])[-1:] == ["--x-%s" % key], "%s: extraArgs not last: %r" % (comp, c.get("args")))
            check({"name": "X_%s" % key.upper(), "value": "1"} in c["env"], "%s: extraEnv missing" % comp)
            check({"name": "x-%s" % key.lower(), "emptyDir": {}} in pod["volumes"], "%s: extraVolumes missing" % comp)
            check({"name": "x-%s" % key.lower(), "mountPath": "/x"} in c["volumeMounts"],
                  "%s: extraVolumeMounts missing" % comp)
            if comp != "mps-control-daemon":  # the MPS daemons never had a memory limit
                check("resources" not in c, "%s: resources null/{} still renders %r" % (comp, c.get("resources")))


def test_hook_and_kernel_log():
    """The CDI hook path the plugin writes into its spec is a host path by default (not the image's
    /usr/bin/gpulet-cdi-hook, nor the plugin's nvidia-ctk default); devicePlugin.kernelLog gives the
    plugin a kernel log it can read."""
    for kube in KUBES:
        pod = daemonsets(helm_lib.template(kube_version=kube))["device-plugin"]["spec"]["template"]["spec"]
        c = pod["containers"][0]
        env = {e["name"]: e.get("value") for e in c["env"]}
        check(env.get("NVIDIA_CDI_HOOK_PATH") == "/usr/bin/nvidia-cdi-hook",
              "kube %s: NVIDIA_CDI_HOOK_PATH %r" % (kube, env.get("NVIDIA_CDI_HOOK_PATH")))
        check("GPULET_KERNEL_LOG" not in env, "kernelLog off: GPULET_KERNEL_LOG set")
    op = {"cdi": {"nvidiaHookPath": "/usr/local/nvidia/toolkit/nvidia-cdi-hook"}, "devicePlugin": {"kernelLog": True}}
    pod = daemonsets(helm_lib.template(values=op))["device-plugin"]["spec"]["template"]["spec"]
    c = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in c["env"]}
    check(env.get("NVIDIA_CDI_HOOK_PATH") == "/usr/local/nvidia/toolkit/nvidia-cdi-hook",
          "GPU Operator hook path %r" % env)
    vols = {v["name"]: v for v in pod["volumes"]}
    log = [m for m in c["volumeMounts"] if vols[m["name"]].get("hostPath", {}).get("path") == "/var/log"]
    check(env.get("GPULET_KERNEL_LOG") == "/host/var/log/kern.log" and len(log) == 1 and log[0]["readOnly"] is True
          and log[0]["mountPath"] == "/host/var/log", "kernelLog: %r %r" % (env.get("GPULET_KERNEL_LOG"), log))


def test_helm_test_pod():
    docs = helm_lib.template(tests=True)
    pods = [d for d in docs if d["kind"] == "Pod"]
    check(len(pods) == 1 and pods[0]["metadata"]["annotations"].get("helm.sh/hook") == "test",
          "helm test pods: %r" % [p["metadata"] for p in pods])
    if pods:
        c = pods[0]["spec"]["containers"][0]
        check(c["command"] == ["/usr/bin/gpulet", "probe"] and c["resources"]["limits"] == {"nvidia.com/gpu": 1},
              "the test pod does not probe a GPU from the plugin: %r" % c)
    check(not [d for d in helm_lib.template() if d["kind"] == "Pod"], "--skip-tests still renders the test pod")
    check(not [d for d in helm_lib.load_base() if d["kind"] == "Pod"], "the kustomize base has the test pod")
    readme = os.path.join(CHART, "README.md")
    text = open(readme).read() if check(os.path.exists(readme), "the chart has no README.md") else ""
    for words in ("helm install", "helm test", "values.schema.json", "gpuNodeSelection", "runtimeClass.create",
                  "oneConfigPerRelease", "nodeArchitectures", "cdi.nvidiaHookPath"):
        check(words in text, "the chart's README.md does not mention %s" % words)


def test_no_blank_lines():
    """No render has a line of only whitespace (a template's stray indent)."""
    full = {"gfd": {"enabled": True}, "runtimeClass": {"create": True}, "config": {"map": {"default": "version: v1"}},
            "metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True},
                        "dashboard": {"enabled": True}},
            "doctor": {"kernelLog": True}, "devicePlugin": {"kernelLog": True}}
    for kube in KUBES:
        for name, values in (("defaults", None), ("everything", full)):
            text = helm_lib.template(values=values, kube_version=kube, raw=True, tests=True)
            bad = [i + 1 for i, line in enumerate(text.split("\n")) if line and not line.strip()]
            check(not bad, "kube %s %s: whitespace-only lines %s" % (kube, name, bad[:10]))
    with open(os.path.join(BASE, "gpulet.yaml")) as f:
        check(not [ln for ln in f.read().split("\n") if ln and not ln.strip()],
              "the kustomize base has whitespace-only lines")


def test_gpu_nodes():
    """Scheduling without NFD (gpuNodeSelection=gpuPresent), the image's architectures (amd64, arm64), and
    NOTES counting the nodes the DaemonSets can run on (lookup; a chart copy answers lookup from the values)."""
    term = {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}
    gp = {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}
    for kube in KUBES:
        for values, want in ((None, None), ({"gpuNodeSelection": "gpuPresent"}, [[gp, term]]),
                             ({"nodeArchitectures": ["amd64"], "gpuNodeSelection": "gpuPresent"},
                              [[gp, dict(term, values=["amd64"])]])):
            for comp, ds in daemonsets(helm_lib.template(values=values, kube_version=kube)).items():
                terms = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
                    "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                # the GPU Operator's pause labels (nvidia.com/gpu.deploy.*) follow in every term: test_helm checks them
                exprs = [[e for e in t["matchExpressions"] if not e["key"].startswith("nvidia.com/gpu.deploy.")]
                         for t in terms]
                check(all(len(e) < len(t["matchExpressions"]) for e, t in zip(exprs, terms)),
                      "kube %s %s: a term lacks the pause label" % (kube, comp))
                if want is None:
                    check(len(exprs) >= 5 and all(e[-1] == term for e in exprs),
                          "kube %s %s: a term lacks kubernetes.io/arch amd64, arm64: %r" % (kube, comp, exprs))
                else:
                    check(exprs == want, "kube %s %s %r: terms %r" % (kube, comp, values, exprs))
    # no restriction for an image built for the nodes' architectures
    ds = daemonsets(helm_lib.template(values={"nodeArchitectures": []}))["device-plugin"]
    exprs = [e for t in ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
             ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] for e in t["matchExpressions"]]
    check(not [e for e in exprs if e["key"] == "kubernetes.io/arch"], "nodeArchitectures [] keeps the arch term")
    check_notes()


def notes(chart, values):
    helm, _ = helm_lib.fetch()
    with tempfile.TemporaryDirectory() as tmp:
        vf = os.path.join(tmp, "v.yaml")
        with open(vf, "w") as f:
            yaml.safe_dump(values, f)
        p = run([helm, "install", "gpulet", chart, "--dry-run=client", "--namespace", "kube-system", "-f", vf])
    check(p.returncode == 0, "helm install --dry-run: %s" % p.stderr)
    return p.stdout.split("NOTES:", 1)[-1]


def check_notes():
    text = notes(CHART, {})
    check("WARNING" not in text and "Nodes matching" not in text, "NOTES without a cluster (lookup empty): %s" % text)
    nfd = "feature.node.kubernetes.io/pci-10de.present"
    nodes = [{"metadata": {"labels": {"kubernetes.io/arch": "amd64", nfd: "true"}}},
             {"metadata": {"labels": {"kubernetes.io/arch": "arm64", nfd: "true"}}},
             {"metadata": {"labels": {"kubernetes.io/arch": "amd64", "nvidia.com/gpu.present": "true"}}},
             {"metadata": {"labels": {"kubernetes.io/arch": "amd64"}}}]
    with tempfile.TemporaryDirectory() as tmp:
        chart = os.path.join(tmp, "gpulet")
        shutil.copytree(CHART, chart)
        helpers = os.path.join(chart, "templates", "_helpers.tpl")
        with open(helpers) as f:
            src = f.read()
        check('lookup "v1" "Node" "" ""' in src, "NOTES: the node count does not lookup the Nodes")
        with open(helpers, "w") as f:
            f.write(src.replace('lookup "v1" "Node" "" ""', "(.Values.fakeLookup | default dict)"))
        for values, want in (({}, "matching the DaemonSets' node affinity and nodeSelector: 3."),
                             ({"gpuNodeSelection": "gpuPresent"}, "and nodeSelector: 1."),
                             ({"nodeSelector": {"pool": "a"}}, "WARNING: no node matches"),
                             ({"gpuNodeSelection": "gpuPresent", "nodeArchitectures": ["arm64"]}, "WARNING: no node")):
            text = notes(chart, dict(values, fakeLookup={"items": nodes}))
            check(want in text, "NOTES with %r: %r not in %s" % (values, want, text))
            if "WARNING" in want:
                check("kubectl label node NODE nvidia.com/gpu.present=true" in text, "NOTES: no way out: %s" % text)


def test_configs():
    """Several configs need config.oneConfigPerRelease; config edits roll the pods."""
    two = {"config": {"map": {"a": "version: v1\n", "b": "version: v1\nflags: {migStrategy: single}\n"}}}
    _, err = template_err(two)
    check(err is not None and "oneConfigPerRelease" in err and "nvidia.com/device-plugin.config" in err,
          "several configs without oneConfigPerRelease: %s" % err)
    two["config"].update(oneConfigPerRelease=True, default="b")
    sums = []
    edited = {"a": "version: v1\n", "b": "version: v1\nflags: {migStrategy: mixed}\n"}
    for cfg in (two, {"config": dict(two["config"], map=edited)}):
        ds = daemonsets(helm_lib.template(values=dict(cfg, gfd={"enabled": True})))
        got = {c: d["spec"]["template"]["metadata"].get("annotations", {}).get("checksum/config") for c, d in ds.items()
               if c in ("device-plugin", "gpu-feature-discovery", "mps-control-daemon")}
        check(len(got) == 3 and len(set(got.values())) == 1 and None not in got.values(), "checksum/config %r" % got)
        sums.append(next(iter(got.values())))
    check(sums[0] != sums[1], "an edit of config.map does not change the pods' checksum/config")
    # an existing ConfigMap (config.name): its data is hashed at install/upgrade (lookup; a chart copy
    # answers it from the values), nothing under helm template
    ext = {"config": {"name": "my-config", "default": "a"}}
    ann = daemonsets(helm_lib.template(values=ext))["device-plugin"]["spec"]["template"]["metadata"]
    check("checksum/config" not in ann.get("annotations", {}), "config.name under helm template: %r" % ann)
    call = 'lookup "v1" "ConfigMap" (include "gpulet.namespace" .) .Values.config.name'
    with tempfile.TemporaryDirectory() as tmp:
        chart = os.path.join(tmp, "gpulet")
        shutil.copytree(CHART, chart)
        helpers = os.path.join(chart, "templates", "_helpers.tpl")
        with open(helpers) as f:
            src = f.read()
        check(call in src, "config.name: the ConfigMap's data is not looked up")
        with open(helpers, "w") as f:
            f.write(src.replace(call, "(.Values.fakeConfigMap | default dict)"))
        got = []
        for data in ({"a": "version: v1\n"}, {"a": "version: v1\nflags: {migStrategy: mixed}\n"}):
            docs = helm_lib.template(values=dict(ext, fakeConfigMap={"data": data}), chart=chart)
            got.append(daemonsets(docs)["device-plugin"]["spec"]["template"]["metadata"]
                       .get("annotations", {}).get("checksum/config"))
        check(None not in got and got[0] != got[1], "an edit of the config.name ConfigMap: checksums %r" % got)
    with open(os.path.join(CHART, "values.yaml")) as f:
        check("rollout restart" in f.read(), "values.yaml does not say how a config.name edit reaches the pods")


def plugin_env(docs):
    ctr = daemonsets(docs)["device-plugin"]["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in ctr.get("env", [])}


def test_device_list_strategy_by_kube_version():
    """Issue 23 item 10: cdi-cri needs kubelet >= 1.29 (CDI device names in the device-plugin API, beta
    and on by default from 1.29); the chart picks it from .Capabilities.KubeVersion, else upstream's
    envvar, and a value the user sets always wins (values.yaml and the schema say so)."""
    for kube, want in (("1.26.0", "envvar"), ("1.28.0", "envvar"), ("1.28.9-eks-1", "envvar"),
                       ("1.29.0", "cdi-cri"), ("1.29.0-gke.1", "cdi-cri"), ("1.33.0", "cdi-cri")):
        got = plugin_env(helm_lib.template(kube_version=kube)).get("DEVICE_LIST_STRATEGY")
        check(got == want, "kube %s: default DEVICE_LIST_STRATEGY %r, expected %r" % (kube, got, want))
    for kube in ("1.28.0", "1.29.0"):
        for mine in ("cdi-cri", "envvar", "envvar,cdi-annotations"):
            got = plugin_env(helm_lib.template(values={"deviceListStrategy": mine}, kube_version=kube))
            check(got.get("DEVICE_LIST_STRATEGY") == mine, "kube %s: deviceListStrategy %r became %r"
                  % (kube, mine, got.get("DEVICE_LIST_STRATEGY")))
    with open(os.path.join(CHART, "values.yaml")) as f:
        vals = yaml.safe_load(f)
        f.seek(0)
        text = f.read()
    check(vals["deviceListStrategy"] is None, "values.yaml deviceListStrategy is %r, not null (chart picks)"
          % vals["deviceListStrategy"])
    check("cdi-cri from Kubernetes 1.29" in text and "KubeVersion" in text and "always wins" in text,
          "values.yaml does not say how the default strategy is picked")
    with open(os.path.join(CHART, "values.schema.json")) as f:
        desc = json.load(f)["properties"]["deviceListStrategy"]["description"]
    check(">= 1.29" in desc and "envvar" in desc, "values.schema.json deviceListStrategy description: %r" % desc)


def main():
    tests = [test_runtimeclass, test_schema, test_device_list_strategy_by_kube_version, test_extras_and_resources, test_hook_and_kernel_log,
             test_helm_test_pod, test_no_blank_lines, test_gpu_nodes, test_configs]
    for t in tests:
        n = len(FAILS)
        t()
        print("%s %s" % ("PASS" if len(FAILS) == n else "FAIL", t.__name__))
    if FAILS:
        raise SystemExit("FAIL: %d problems (first: %s)" % (len(FAILS), FAILS[0]))
    print("PASS chart")


if __name__ == "__main__":
    main()
