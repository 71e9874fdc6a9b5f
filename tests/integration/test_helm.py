#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The Helm chart deploy/helm/gpulet, judged by the real helm v4 (lint, template) and kubectl 1.33
(kustomize), over a matrix of values, and the rendered manifests judged against the binary:

- every flag and env var a container passes is one `gpulet VERB --help` documents (or one the
  nvidia container runtime reads, or a listed undocumented one found in the binary), and gpulet
  accepts them: `plugin --print-config` and `labels --oneshot` run with the rendered env and args
  and give the effective settings the values asked for;
- each container's host mounts are exactly what its verb reads (plugin: the driver files, /proc,
  /sys, /dev below --root; labels: features.d and DMI; exporter: the PodResources socket; doctor:
  each input of its checks, read-only), writable only where the verb writes; none is the host's /,
  /etc or /var/lib/kubelet as a whole, none reaches kubelet's pki/ or other pods' dirs (pods/);
- the doctor's mounts are complete: `gpulet doctor` on a healthy fake node copied through only the
  rendered DaemonSet's hostPaths finds what it finds on the whole node (test_doctor_view);
- least privilege: no privileged, no capabilities, read-only root filesystem, no privilege
  escalation, RuntimeDefault seccomp; a service-account token only in the pods whose verb calls the API
  server, each with one account of its own bound to exactly the union of the rules its enabled features'
  code needs (FEATURE_RULES: node health, per-node configs, NodeFeature, the doctor's cluster; the real
  API server judges them in tests/k8s: test_k8s_node_health, test_k8s_node_config_rbac,
  test_k8s_nodefeature, test_k8s_doctor);
- the GPU Operator's pause labels in every DaemonSet's affinity (DEPLOY_LABELS; the real DaemonSet
  controller moves the pods: tests/k8s/test_k8s_pause.py);
- the keys shared with NVIDIA's chart are there and mean the same (docs/reference/helm-chart.md);
- the kustomize base is the chart's render and `kubectl kustomize` renders it; the chart's copies
  of the alert rules and dashboard equal deploy/'s; the chart version is gpulet's."""
import copy
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helm_lib  # noqa: E402
from helm_lib import BASE, CHART, CHART_FILES, SRC, find, run  # noqa: E402

BUILD = os.environ.get("GPULET_BUILD") or os.path.join(SRC, "build")
GPULET = os.environ.get("GPULET") or os.path.join(BUILD, "gpulet")
FAKE_NVML_LIB = os.environ.get("FAKE_NVML_LIB") or os.path.join(BUILD, "fakenvml", "libnvidia-ml.so.1")
FIXTURE = os.path.join(SRC, "tests", "fixtures", "dgx-a100.json")
SANITIZED = os.path.exists(GPULET) and b"__asan_init" in open(GPULET, "rb").read()
FAILS = []


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL:", msg)
    return cond


# Env vars read by the nvidia container runtime (it injects the device nodes and libnvidia-ml into
# the pod), not by gpulet (docs/reference/device-plugin.md §1, helm daemonset-device-plugin.yml).
RUNTIME_ENV = {"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_MIG_MONITOR_DEVICES"}
# Read by gpulet but not listed in the verb's --help (src/cmd/verb_exporter.c: the Hostname label).
UNDOCUMENTED_ENV = {"exporter": {"NODE_NAME"}}

# What each verb reads and writes on the host, by host path (the contract each verb's code has:
# plugin src/host/driver.c, src/nvml/node.c, src/cdi/; labels src/labels/; exporter src/kube/podres.c;
# doctor every link of the chain, `gpulet doctor --list`).
PLUGIN_READS = {"/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/proc/driver", "/sys/bus/pci", "/sys/devices",
                "/dev", "/run/nvidia-persistenced", "/run/nvidia-fabricmanager", "/etc/OpenCL/vendors", "/etc/vulkan"}
# MPS (src/plugin/mps.c, daemon_mps.c): the control daemons' dir (values mps.root, here its default)
# and the tmpfs mount-shm puts under it; the plugin asks the daemons over their sockets there
MPS, MPS_SHM = "{mps}", "{mps}/shm"
# The doctor (src/doctor/, `gpulet doctor --list`; the chart's gpulet.doctorMounts names the check of
# each): the driver files and what CDI specs name (as the plugin's), /proc/driver, /sys, /dev, package
# versions, containerd's and the NVIDIA runtime's
# config, the CDI dirs, and of kubelet's dir only its config, device-plugins/ and pod-resources/.
# test_doctor_view proves this list complete; values doctor.kernelLog adds /var/log.
DOCTOR_READS = {"/usr", "/lib", "/lib64", "/run/nvidia-persistenced", "/run/nvidia-fabricmanager",
                "/etc/OpenCL/vendors", "/etc/vulkan", "/proc/driver", "/sys/module", "/sys/bus/pci", "/sys/devices", "/dev",
                "/var/lib/dpkg", "/etc/containerd/config.toml", "/etc/containerd/conf.d", "/etc/nvidia-container-runtime",
                "/etc/cdi", "/var/run/cdi",
                "/run/cdi", "/var/lib/kubelet/config.yaml", "/var/lib/kubelet/device-plugins",
                "/var/lib/kubelet/pod-resources"}
# never mounted whole by any DaemonSet, and what no mount may reach (other pods' secrets, kubelet's keys);
# /proc whole has every process's root and environment behind its <pid>/ magic links
# /etc/containerd: its certs.d/ holds registry client keys (the doctor mounts config.toml and conf.d only)
NEVER_WHOLE = {"/", "/etc", "/var/lib/kubelet", "/proc", "/sys", "/etc/containerd"}
KUBELET_PRIVATE = ("/var/lib/kubelet/pods", "/var/lib/kubelet/pki")
HOST_PATHS = {
    "plugin": PLUGIN_READS | {"/var/lib/kubelet/device-plugins", "/var/run/cdi", MPS, MPS_SHM},
    "labels": {"/etc/kubernetes/node-feature-discovery/features.d", "/sys/class/dmi/id"},
    "exporter": {"/var/lib/kubelet/pod-resources"},
    "doctor": DOCTOR_READS,
    "mps-control-daemon": {MPS, MPS_SHM},
}
WRITES = {
    "plugin": {"/var/lib/kubelet/device-plugins", "/var/run/cdi", MPS, MPS_SHM},
    "labels": {"/etc/kubernetes/node-feature-discovery/features.d"},
    "exporter": set(),
    "doctor": set(),
    "mps-control-daemon": {MPS, MPS_SHM},
}
# where each verb expects a host path inside the container: below --root=/host, at a fixed container
# path (upstream's /mps, the MPS tmpfs as /dev/shm), or at the host path
UNDER_ROOT = {"plugin": PLUGIN_READS | {"/var/run/cdi", MPS, "/var/log"}, "doctor": DOCTOR_READS | {"/var/log"}}
AT = {"plugin": {MPS_SHM: "/dev/shm"}, "mps-control-daemon": {MPS: "/mps", MPS_SHM: "/dev/shm"}}
# Verbs that cannot run unprivileged, with the reason: nvidia-smi sets the compute mode, and the
# MPS tmpfs is a mount the host must see (upstream runs the same containers privileged).
PRIVILEGED = {"mps-control-daemon"}

# What each feature's code asks of the API server, as (where, apiGroup, resource, verb): "cluster" a
# ClusterRole, "ns" a Role of the release's namespace, "default" a Role of the namespace default (the API
# takes a Node's events only there). nodeHealth: src/plugin/node_health.c (GET its Node, apply nodes/status,
# create Events); nodeConfig: src/nodeconfig/follow.c (its Node watched by name, a Warning Event on it);
# nodeFeature: src/labels/nodefeature.c (its NodeFeature followed and written, its own pod for the owners);
# readCluster: src/doctor/cluster_live.c (its Node and the pods on it followed, their events listed).
FEATURE_RULES = {
    "nodeHealth": {("cluster", "", "nodes", "get"), ("cluster", "", "nodes/status", "patch"),
                   ("default", "", "events", "create")},
    "nodeConfig": {("cluster", "", "nodes", v) for v in ("get", "list", "watch")} | {("default", "", "events", "create")},
    "nodeFeature": {("ns", "nfd.k8s-sigs.io", "nodefeatures", v) for v in ("get", "list", "watch", "create", "update")} |
                   {("ns", "", "pods", "get")},
    "readCluster": {("cluster", "", r, v) for r in ("nodes", "pods") for v in ("get", "list", "watch")} |
                   {("cluster", "", "events", "list")},
    # the pods of its node (fieldSelector spec.nodeName) for their labels and UIDs: src/exporter/podmeta.c
    "podMeta": {("cluster", "", "pods", v) for v in ("get", "list", "watch")},
}
# the features of each verb's pod and the values that turn each on, with their default (nodeConfig:
# node_config_on(), podMeta: exporter_watches_pods()); one account per pod holds the union of its features' rules
API_FEATURES = {"plugin": [("nodeHealth", "devicePlugin.nodeHealth", True), ("nodeConfig", None, None)],
                "mps-control-daemon": [("nodeConfig", None, None)],
                "labels": [("nodeFeature", "gfd.useNodeFeatureAPI", None), ("nodeConfig", None, None)],
                "doctor": [("readCluster", "doctor.readCluster", True)],
                "exporter": [("podMeta", None, None)]}
# The GPU Operator's deploy labels each verb's DaemonSet must not run under (docs/reference/helm-chart.md
# "Pause labels"), and the values that pause it (mig-parted, k8s-driver-manager).
DEPLOY_LABELS = {"plugin": ["nvidia.com/gpu.deploy.device-plugin"],
                 "mps-control-daemon": ["nvidia.com/gpu.deploy.device-plugin"],
                 "labels": ["nvidia.com/gpu.deploy.gpu-feature-discovery"],
                 "exporter": ["nvidia.com/gpu.deploy.dcgm-exporter"],
                 "doctor": ["nvidia.com/gpu.deploy.gpulet-doctor", "nvidia.com/gpu.deploy.device-plugin"]}
PAUSED = ["false", "paused-for-mig-change", "paused-for-driver-upgrade", "paused-for-mig-change_paused-for-driver-upgrade"]


def value_of(values, dotted, default):
    v = dig(values, dotted)
    return default if v is KeyError or v is None else v


def node_config_on(values):
    """Per-node configs (the chart's gpulet.nodeConfig): config.followNodeLabel, else on for an external
    config.name or several configs in config.map."""
    follow = value_of(values, "config.followNodeLabel", None)
    if isinstance(follow, bool):
        return follow
    return bool(value_of(values, "config.name", "")) or len(value_of(values, "config.map", {}) or {}) > 1


def api_features(verb, values):
    return [f for f, dotted, default in API_FEATURES.get(verb, ())
            if {"nodeConfig": node_config_on, "podMeta": exporter_watches_pods}.get(
                f, lambda v: value_of(v, dotted, default) is not False)(values)]


def api_on(verb, values):
    return bool(api_features(verb, values))


def api_rules(verb, values):
    return set().union(*(FEATURE_RULES[f] for f in api_features(verb, values)))


_HELP = {}


def help_text(verb):
    if verb not in _HELP:
        p = run([GPULET, verb, "--help"])
        check(p.returncode == 0, "gpulet %s --help: rc %d" % (verb, p.returncode))
        _HELP[verb] = p.stdout
    return _HELP[verb]


def binary_has(s):
    with open(GPULET, "rb") as f:
        return s.encode() in f.read()


def check_flags_env(name, verb, c):
    text = help_text(verb)
    words = set(re.findall(r"--[a-z0-9-]+", text))
    for a in c.get("args", []):
        flag = a.split("=", 1)[0]
        if flag in words:
            continue
        check(False, "%s: %s passes %s, which `gpulet %s --help` does not list" % (name, verb, flag, verb))
    envs = set(re.findall(r"\b[A-Z][A-Z0-9_]{2,}\b", text))
    for e in c.get("env", []):
        n = e["name"]
        if n in envs or n in RUNTIME_ENV:
            continue
        if n in UNDOCUMENTED_ENV.get(verb, ()):
            check(binary_has(n), "%s: env %s is not read by the binary" % (name, n))
            continue
        check(False, "%s: env %s is not one `gpulet %s --help` lists" % (name, n, verb))


def exporter_watches_pods(values):
    """The exporter watches its node's pods (pod labels, UIDs, virtual GPUs' per-pod values): its token and RBAC."""
    exp = values.get("exporter") or {}
    k = exp.get("kubernetes") or {}
    return bool(k.get("enablePodLabels") or k.get("enablePodUID") or exp.get("kubernetesVirtualGPUs"))


def check_security(name, pod, c, values, verb):
    sc = c.get("securityContext", {})
    check(pod.get("automountServiceAccountToken") is api_on(verb, values),
          "%s: service-account token %r, its verb calls the API server: %s" % (
              name, pod.get("automountServiceAccountToken"), api_on(verb, values)))
    if verb in PRIVILEGED:
        check(sc.get("privileged") is True and sc.get("readOnlyRootFilesystem") is True,
              "%s: privileged with a read-only root" % name)
        # the MPS server needs host PIDs (docs/reference/helm-chart.md §2): mps.enableHostPID, default true
        want = (values.get("mps") or {}).get("enableHostPID", True) is not False
        check(bool(pod.get("hostPID")) == want and not pod.get("hostIPC"),
              "%s: hostPID %r, hostIPC %r (mps.enableHostPID %r)" % (name, pod.get("hostPID"), pod.get("hostIPC"), want))
        return
    check(not sc.get("privileged"), "%s: privileged" % name)
    check(sc.get("allowPrivilegeEscalation") is False, "%s: allowPrivilegeEscalation must be false" % name)
    check(sc.get("readOnlyRootFilesystem") is True, "%s: readOnlyRootFilesystem must be true" % name)
    caps = sc.get("capabilities", {})
    # gfd.vgpuConfigSpace: CAP_SYS_ADMIN alone, to read vGPUs' whole PCI config space (issue 35 item 7)
    vgpu = verb == "labels" and (values.get("gfd") or {}).get("vgpuConfigSpace")
    check(caps.get("drop") == ["ALL"] and caps.get("add", []) == (["SYS_ADMIN"] if vgpu else []),
          "%s: capabilities %r (drop ALL, add %s)" % (name, caps, "SYS_ADMIN" if vgpu else "none"))
    check(pod.get("securityContext", {}).get("seccompProfile") == {"type": "RuntimeDefault"},
          "%s: pod seccompProfile %r" % (name, pod.get("securityContext")))
    # exporter.kubernetesVirtualGPUs: NVML's host PIDs to /proc/<pid>/cgroup (per-pod FB_USED, GPU_UTIL)
    host_pid = verb == "exporter" and bool((values.get("exporter") or {}).get("kubernetesVirtualGPUs"))
    check(bool(pod.get("hostPID")) == host_pid, "%s: hostPID %r" % (name, pod.get("hostPID")))
    check(not pod.get("hostIPC"), "%s: hostIPC" % name)


def check_mounts(name, verb, pod, c, values, kube):
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    droot = os.path.normpath(values.get("nvidiaDriverRoot") or "/")
    mps = os.path.normpath((values.get("mps") or {}).get("root") or "/run/nvidia/mps")

    def host(paths):
        return {p.format(mps=mps) for p in paths}
    expect = host(HOST_PATHS[verb])
    hpc = (values.get("exporter") or {}).get("hpcJobMappingDir")
    if verb == "exporter" and hpc:
        expect.add(hpc)  # the job files, read-only at the same path (--hpc-job-mapping-dir)
    if verb in ("plugin", "doctor") and droot != "/":
        expect.add(droot)
    if verb == "doctor" and (values.get("doctor") or {}).get("kernelLog"):
        expect.add("/var/log")
    # devicePlugin.kernelLog: kern.log for the XIDs NVML misses (GPULET_KERNEL_LOG), read-only
    if verb == "plugin" and (values.get("devicePlugin") or {}).get("kernelLog"):
        expect.add("/var/log")
    seen = set()
    for m in c.get("volumeMounts", []):
        hp = vols[m["name"]].get("hostPath")
        if not hp:
            continue
        path = hp["path"]
        seen.add(path)
        check_reach(name, path)
        writable = path in host(WRITES[verb])
        check(writable or m.get("readOnly") is True, "%s: hostPath %s must be readOnly" % (name, path))
        check(not writable or not m.get("readOnly"), "%s: hostPath %s must be writable" % (name, path))
        under_root = path in host(UNDER_ROOT.get(verb, ())) or (verb in ("plugin", "doctor") and path == droot != "/")
        at = {p.format(mps=mps): where for p, where in AT.get(verb, {}).items()}
        want = at.get(path) or (("/host" + path).rstrip("/") if under_root else path)
        check(m["mountPath"] == want, "%s: %s mounted at %s, expected %s" % (name, path, m["mountPath"], want))
        if verb == "doctor":
            check(m.get("readOnly") is True, "%s: %s must be readOnly" % (name, path))
            check(m.get("recursiveReadOnly") == ("IfPossible" if kube >= (1, 30) else None),
                  "%s: recursiveReadOnly %r on Kubernetes %s (the field exists from 1.30)"
                  % (name, m.get("recursiveReadOnly"), kube))
            check(m.get("mountPropagation") in (None, "None"), "%s: %s propagation %r with recursiveReadOnly"
                  % (name, path, m.get("mountPropagation")))
    check(seen == expect, "%s: host mounts %s, expected exactly %s (missing %s, extra %s)"
          % (name, sorted(seen), sorted(expect), sorted(expect - seen), sorted(seen - expect)))
    if "--root=/host" in c.get("args", []):
        check(verb in UNDER_ROOT, "%s: --root=/host for a verb that reads no host root" % name)


def check_rbac(name, docs, verbs, values, namespace):
    """Each verb that calls the API server runs under one account of its own, bound to exactly the union
    of its enabled features' FEATURE_RULES; no other account, role or binding is rendered."""
    roles = {}
    for d in docs:
        if d["kind"] in ("ClusterRole", "Role"):
            roles[(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])] = d["rules"]
    accounts = set()
    for verb, (pod, _) in verbs.items():
        sa = pod.get("serviceAccountName")
        if not api_on(verb, values):
            check(sa is None, "%s: %s runs as %s without calling the API server" % (name, verb, sa))
            continue
        accounts.add(sa)
        got = set()
        for b in (d for d in docs if d["kind"] in ("ClusterRoleBinding", "RoleBinding")):
            if {"kind": "ServiceAccount", "name": sa, "namespace": namespace} not in b["subjects"]:
                continue
            ns = b["metadata"].get("namespace")
            where = "cluster" if b["kind"] == "ClusterRoleBinding" else "ns" if ns == namespace else ns
            rules = roles.get((b["roleRef"]["kind"], ns if b["roleRef"]["kind"] == "Role" else None,
                               b["roleRef"]["name"]), [])
            check(rules, "%s: %s binds %s to a role the chart does not render" % (name, b["metadata"]["name"], sa))
            for r in rules:
                got |= {(where, g, res, v) for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}
        want = api_rules(verb, values)
        check(got == want, "%s: %s's account %s may %s, its code needs exactly %s (extra %s, missing %s)"
              % (name, verb, sa, sorted(got), sorted(want), sorted(got - want), sorted(want - got)))
    rendered = {d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"}
    check(rendered == accounts, "%s: ServiceAccounts %s, the pods use %s" % (name, sorted(rendered), sorted(accounts)))
    for d in docs:
        if d["kind"] in ("Role", "RoleBinding") and d["metadata"].get("namespace") != namespace:
            check(d["metadata"]["namespace"] == "default" and ("rules" not in d or d["rules"] == [
                {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]),
                  "%s: %s %s in namespace %s" % (name, d["kind"], d["metadata"]["name"], d["metadata"]["namespace"]))


def check_pause(name, verb, pod, values):
    """Every required term of the DaemonSet's affinity keeps the pods off a node whose deploy label pauses
    them, and admits one without the label."""
    if value_of(values, "operatorPauseLabels", True) is False:
        return
    terms = pod.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution",
                                                                 {}).get("nodeSelectorTerms", [])
    want = [{"key": k, "operator": "NotIn", "values": PAUSED} for k in DEPLOY_LABELS[verb]]
    check(terms and all(all(w in t.get("matchExpressions", []) for w in want) for t in terms),
          "%s: %s's affinity terms lack the pause labels %s: %s" % (name, verb, DEPLOY_LABELS[verb], terms))


def check_reach(name, path):
    """No hostPath is the host's /, /etc or kubelet's dir whole, nor holds or lies in kubelet's pods/ or pki/."""
    p = os.path.normpath(path)
    check(p not in NEVER_WHOLE, "%s: hostPath %s mounts all of %s" % (name, path, p))
    for private in KUBELET_PRIVATE:
        check(not (private == p or private.startswith(p.rstrip("/") + "/") or p.startswith(private + "/")),
              "%s: hostPath %s reaches %s" % (name, path, private))


def env_of(c, config_dir, values):
    """The container's env with the ConfigMap's file materialized in config_dir."""
    env = {}
    # what the downward API gives the pod (spec.nodeName, metadata.namespace, metadata.name)
    field = {"spec.nodeName": "node-1", "metadata.namespace": "gpulet", "metadata.name": "pod-1"}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
        elif "fieldRef" in e.get("valueFrom", {}):
            env[e["name"]] = field[e["valueFrom"]["fieldRef"]["fieldPath"]]
    # per-node configs: no API server here to read the node's label from, so the container runs as on a
    # node without the label: DEFAULT_CONFIG's file (tests/k8s/test_k8s_node_config*.py follow the label)
    if "CONFIG_FILE_SRCDIR" in env:
        srcdir, default = env.pop("CONFIG_FILE_SRCDIR"), env.pop("DEFAULT_CONFIG", "") or "default"
        env.pop("FALLBACK_STRATEGIES", None)
        env["CONFIG_FILE"] = os.path.join(srcdir, default)
    if "CONFIG_FILE" in env:
        key = os.path.basename(env["CONFIG_FILE"])
        cmap = values.get("config", {}).get("map") or {}
        path = os.path.join(config_dir, key)
        with open(path, "w") as f:
            f.write(cmap.get(key, "version: v1\n"))
        env["CONFIG_FILE"] = path
    return env


def check_plugin_accepts(name, c, values):
    """gpulet takes the rendered env and args and they mean what the values say."""
    with tempfile.TemporaryDirectory() as tmp:
        env = env_of(c, tmp, values)
        p = run([GPULET, "plugin", "--print-config", *c["args"]], env=dict(os.environ, **env))
        if not check(p.returncode == 0 and p.stderr == "", "%s: plugin rejects its settings: %s" % (name, p.stderr)):
            return
        eff = json.loads(p.stdout)
    want = {"migStrategy": ("mig-strategy", lambda v: v), "failOnInitError": ("fail-on-init-error", bool),
            "deviceListStrategy": ("device-list-strategy", lambda v: v.split(",")),
            "deviceIDStrategy": ("device-id-strategy", lambda v: v), "nvidiaDriverRoot": ("driver-root", lambda v: v),
            "compatWithCPUManager": ("pass-device-specs", bool)}
    for key, (field, conv) in want.items():
        v = values.get(key)
        if v is not None:
            check(eff[field] == conv(v), "%s: values %s=%r gave %s=%r" % (name, key, v, field, eff[field]))
    check(eff["root"] == "/host" and eff["mps-root"] == values.get("mps", {}).get("root", "/run/nvidia/mps"),
          "%s: root %r, mps-root %r" % (name, eff["root"], eff["mps-root"]))
    flags = values.get("cdi", {}).get("featureFlags")
    check(eff["cdi-feature-flags"] == (flags.split(",") if flags else []),
          "%s: cdi.featureFlags %r gave %r" % (name, flags, eff["cdi-feature-flags"]))
    return eff


def check_labels_accepts(name, c, values, fixture=FIXTURE):
    """`gpulet labels --oneshot` with the rendered env and args (output to stdout) on the fake NVML."""
    args = [a for a in c["args"] if not a.startswith("--output-file")]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, FAKE_NVML_FIXTURE=fixture, **env_of(c, tmp, values))
        if SANITIZED:  # keep the fake NVML mapped past dlclose, as plugin_lib.Harness.plugin_env explains
            env["LD_PRELOAD"] = FAKE_NVML_LIB
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
        p = run([GPULET, "labels", "--oneshot", "--output-file", "-", "--nvml-library", FAKE_NVML_LIB, *args],
                env=env)
    if not check(p.returncode == 0, "%s: labels rejects its settings: %s" % (name, p.stderr)):
        return ""
    return p.stdout


def check_services(name, docs):
    pods = {d["metadata"]["name"]: d for d in docs if d["kind"] == "DaemonSet"}
    for ds in pods.values():
        sel = ds["spec"]["selector"]["matchLabels"]
        labels = ds["spec"]["template"]["metadata"]["labels"]
        check(sel.items() <= labels.items(), "%s: %s selector %r not in its pod labels" % (name, ds["metadata"]["name"], sel))
    for svc in (d for d in docs if d["kind"] == "Service"):
        sel = svc["spec"]["selector"]
        hits = [ds for ds in pods.values() if sel.items() <= ds["spec"]["template"]["metadata"]["labels"].items()]
        check(len(hits) == 1, "%s: Service %s selects %d DaemonSets" % (name, svc["metadata"]["name"], len(hits)))
        for ds in hits:
            (c,) = ds["spec"]["template"]["spec"]["containers"]
            ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
            check(svc["spec"]["ports"][0]["targetPort"] in ports, "%s: Service %s targets a port the pod lacks"
                  % (name, svc["metadata"]["name"]))
            ann = ds["spec"]["template"]["metadata"].get("annotations", {})
            if "prometheus.io/port" in ann:
                check(int(ann["prometheus.io/port"]) == ports["metrics"], "%s: scrape annotation port" % name)
            addr = [a for a in c["args"] if a.startswith(("--address=", "--serve-metrics="))]
            check(addr and addr[0].endswith(":%d" % ports["metrics"]), "%s: listen %r vs containerPort %d"
                  % (name, addr, ports["metrics"]))
    for sm in (d for d in docs if d["kind"] == "ServiceMonitor"):
        sel = sm["spec"]["selector"]["matchLabels"]
        svcs = [s for s in docs if s["kind"] == "Service" and sel.items() <= s["metadata"]["labels"].items()]
        check(len(svcs) == 1 and sm["spec"]["endpoints"][0]["port"] in [p["name"] for p in svcs[0]["spec"]["ports"]],
              "%s: ServiceMonitor %s matches %d Services" % (name, sm["metadata"]["name"], len(svcs)))


def check_render(name, values, kube="1.33.0", namespace="gpulet"):
    helm, _ = helm_lib.fetch()
    with tempfile.TemporaryDirectory() as tmp:
        vf = os.path.join(tmp, "v.yaml")
        with open(vf, "w") as f:
            yaml.safe_dump(values, f)
        p = run([helm, "lint", "--strict", CHART, "--values", vf, "--kube-version", kube, "--namespace", namespace])
        check(p.returncode == 0, "%s: helm lint: %s %s" % (name, p.stdout[-2000:], p.stderr[-2000:]))
    docs = helm_lib.template(values=values, namespace=namespace, kube_version=kube)
    kv = tuple(int(x) for x in kube.split(".")[:2])
    cluster_scoped = {"RuntimeClass", "ClusterRole", "ClusterRoleBinding"}
    for d in docs:
        # the plugin's events about its Node: a Role of the namespace default (check_rbac)
        if d["kind"] not in cluster_scoped and d["metadata"].get("namespace") != "default":
            check(d["metadata"].get("namespace") == namespace, "%s: %s %s not in namespace %s"
                  % (name, d["kind"], d["metadata"]["name"], namespace))
    image = "%s:%s" % (values.get("image", {}).get("repository", "ghcr.io/gpulet/gpulet"),
                       values.get("image", {}).get("tag") or chart_meta()["appVersion"])
    verbs = {}
    for ds in (d for d in docs if d["kind"] == "DaemonSet"):
        pod = ds["spec"]["template"]["spec"]
        for c in pod["containers"]:
            cname = "%s/%s/%s" % (name, ds["metadata"]["name"], c["name"])
            check(c["command"][0] == "/usr/bin/gpulet" and len(c["command"]) == 2, "%s: command %r" % (cname, c["command"]))
            verb = c["command"][1]
            check(verb in HOST_PATHS and verb not in verbs, "%s: verb %s" % (cname, verb))
            verbs[verb] = (pod, c)
            check(c["image"] == image, "%s: image %s, expected %s" % (cname, c["image"], image))
            check_flags_env(cname, verb, c)
            check_security(cname, pod, c, values, verb)
            check_pause(cname, verb, pod, values)
            check_mounts(cname, verb, pod, c, values, kv)
            rc = values.get("runtimeClassName", "nvidia")
            if verb == "doctor":
                rc = values.get("doctor", {}).get("runtimeClassName") or rc
            check(pod.get("runtimeClassName") == (rc or None), "%s: runtimeClassName %r" % (cname, pod.get("runtimeClassName")))
    check_services(name, docs)
    check_rbac(name, docs, verbs, values, namespace)
    return docs, verbs


def chart_meta():
    with open(os.path.join(CHART, "Chart.yaml")) as f:
        return yaml.safe_load(f)


def chart_values():
    with open(os.path.join(CHART, "values.yaml")) as f:
        return yaml.safe_load(f)


def deep_set(d, dotted, v):
    keys = dotted.split(".")
    for k in keys[:-1]:
        d = d.setdefault(k, {})
    d[keys[-1]] = v


def dig(d, dotted):
    for k in dotted.split("."):
        if not isinstance(d, dict) or k not in d:
            return KeyError
        d = d[k]
    return d


# Keys of NVIDIA's chart (deployments/helm/nvidia-device-plugin/values.yaml) that gpulet's chart has
# with the same meaning; docs/reference/helm-chart.md is the table with the sources.
UPSTREAM_KEYS = ["config.name", "config.map", "config.default", "compatWithCPUManager", "migStrategy",
                 "failOnInitError", "deviceListStrategy", "deviceIDStrategy", "nvidiaDriverRoot", "nvidiaDevRoot",
                 "gdrcopyEnabled", "gdsEnabled", "mofedEnabled", "deviceDiscoveryStrategy", "nameOverride",
                 "fullnameOverride", "namespaceOverride", "selectorLabelsOverride", "imagePullSecrets",
                 "image.repository", "image.pullPolicy", "image.tag", "updateStrategy", "podAnnotations",
                 "podSecurityContext", "securityContext", "resources", "nodeSelector", "affinity", "tolerations",
                 "priorityClassName", "runtimeClassName", "devicePlugin.enabled", "gfd.enabled", "gfd.nameOverride",
                 "gfd.noTimestamp", "gfd.sleepInterval", "gfd.securityContext", "mps.root", "cdi.nvidiaHookPath",
                 "cdi.featureFlags"]


def test_matrix():
    defaults = chart_values()
    with open(os.path.join(CHART, "ci", "time-slicing-values.yaml")) as f:
        ts = yaml.safe_load(f)
    # an upstream user's values file, keys as nvidia-device-plugin's chart spells them
    upstream = {"migStrategy": "mixed", "failOnInitError": False, "deviceListStrategy": "envvar,cdi-annotations",
                "deviceIDStrategy": "index", "nvidiaDriverRoot": "/run/nvidia/driver", "compatWithCPUManager": True,
                "gdsEnabled": True, "mofedEnabled": False, "deviceDiscoveryStrategy": "nvml",
                "cdi": {"nvidiaHookPath": "/usr/local/nvidia/toolkit/nvidia-cdi-hook",
                        "featureFlags": "disable-ipc-discoverer"},
                "gfd": {"enabled": True, "sleepInterval": "30s", "noTimestamp": True},
                "config": {"name": "my-plugin-config", "default": "config.yaml"},
                "nodeSelector": {"nvidia.com/gpu.present": "true"}, "tolerations": [], "affinity": None,
                "mps": {"enableHostPID": False},
                "priorityClassName": "", "resources": {}, "runtimeClassName": "nvidia",
                "image": {"repository": "registry.example/gpulet", "tag": "dev"}}
    everything = {"gfd": {"enabled": True}, "exporter": {"kubernetesVirtualGPUs": True, "port": 9500},
                  "doctor": {"port": 9502, "interval": 60, "live": False, "runtimeClassName": "nvidia-doctor",
                             "kernelLog": True},
                  "devicePlugin": {"kernelLog": True},
                  "metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True},
                              "dashboard": {"enabled": os.path.exists(os.path.join(CHART, "files", CHART_FILES[1]))}}}
    # and no API access at all, nor the Operator's pause labels: no account, no token, no such term
    only_plugin = {"exporter": {"enabled": False}, "doctor": {"enabled": False}, "runtimeClassName": None,
                   "deviceListStrategy": None, "metrics": {"scrapeAnnotations": False},
                   "devicePlugin": {"nodeHealth": False}, "operatorPauseLabels": False}
    # MPS sharing: labels set nvidia.com/mps.capable, the MPS daemons' nodeSelector (a node without MIG)
    mps = {"gfd": {"enabled": True}, "config": {"map": {"default": "version: v1\nsharing:\n  mps:\n    resources:\n"
                                                                   "    - {name: nvidia.com/gpu, replicas: 2}\n"}}}
    # issue 35: the exporter's pod labels, UIDs and HPC jobs (dcgm-exporter's kubernetes.* keys), vGPU labels
    pods = {"exporter": {"kubernetes": {"enablePodLabels": True, "enablePodUID": True,
                                        "podLabelAllowlistRegex": ["^app$", "^team,x$"]},
                         "hpcJobMappingDir": "/var/run/slurm-gpu-jobs"},
            "gfd": {"enabled": True, "vgpuConfigSpace": True}}
    matrix = [("defaults", {}, "1.33.0"), ("defaults-k8s-1.29", {}, "1.29.0"), ("time-slicing", ts, "1.33.0"),
              ("upstream-values", upstream, "1.31.0"), ("everything", everything, "1.33.0"),
              ("only-plugin", only_plugin, "1.26.0"), ("mps", mps, "1.33.0"), ("exporter-pods", pods, "1.33.0")]
    for name, values, kube in matrix:
        docs, verbs = check_render(name, values, kube)
        merged = copy.deepcopy(defaults)
        for k, v in values.items():
            if isinstance(v, dict) and isinstance(merged.get(k), dict):
                merged[k].update(v)
            else:
                merged[k] = v
        if "plugin" in verbs:
            check_plugin_accepts(name, verbs["plugin"][1], merged)
        if "labels" in verbs:
            fx = os.path.join(SRC, "tests", "fixtures", "single-t4.json") if name == "mps" else FIXTURE
            out = check_labels_accepts(name, verbs["labels"][1], merged, fx)
            if name == "mps":
                sel = verbs["mps-control-daemon"][0]["nodeSelector"]
                check(all("%s=%s" % kv in out for kv in sel.items()) and "nvidia.com/gpu.replicas=2" in out,
                      "mps: the labels do not select the MPS daemons' nodes (%r): %s" % (sel, out[:600]))
            if name == "time-slicing":
                check("nvidia.com/gpu.replicas=4" in out and "nvidia.com/gpu.sharing-strategy=time-slicing" in out,
                      "time-slicing: the labels miss the ConfigMap's sharing: %s" % out[:400])
        print("PASS render %s (kube %s): %d objects, verbs %s" % (name, kube, len(docs), sorted(verbs)))
        if name == "defaults":
            check(set(verbs) == {"plugin", "mps-control-daemon", "exporter", "doctor"},
                  "defaults run %s" % sorted(verbs))
            # the MPS daemons: only where `gpulet labels` found an MPS config, their tmpfs made first
            pod, _ = verbs["mps-control-daemon"]
            init = pod.get("initContainers", [])
            check(pod.get("nodeSelector") == {"nvidia.com/mps.capable": "true"}, "mps nodeSelector %r" % pod)
            check([c["command"][1:] for c in init] == [["mps-control-daemon", "mount-shm"]] and
                  init[0]["volumeMounts"][0]["mountPropagation"] == "Bidirectional", "mps init %r" % init)
        if name == "exporter-pods":
            check_exporter_rbac(docs, verbs)
        if name == "defaults":
            check(not [d for d in docs if d["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")
                       and d["metadata"]["name"].endswith("-exporter")],
                  "defaults: the exporter has API access it does not use")
        if name == "only-plugin":
            check(set(verbs) == {"plugin", "mps-control-daemon"} and not [d for d in docs if d["kind"] == "RuntimeClass"],
                  "only-plugin renders %s" % [d["kind"] for d in docs])
            check(not [d for d in docs if d["kind"] in ("ServiceAccount", "ClusterRole", "Role")] and
                  "nvidia.com/gpu.deploy" not in json.dumps(verbs["plugin"][0].get("affinity")),
                  "only-plugin: an account or a pause term without nodeHealth and operatorPauseLabels")
        if name == "everything":
            kinds = sorted(d["kind"] for d in docs)
            check(kinds.count("ServiceMonitor") == 2 and "PrometheusRule" in kinds, "everything: kinds %s" % kinds)
            rule = find(docs, "PrometheusRule")
            with open(os.path.join(SRC, "deploy", "prometheus-rules.yaml")) as f:
                check(rule["spec"] == yaml.safe_load(f)["spec"], "PrometheusRule spec differs from deploy/'s rules")
            check(verbs["doctor"][0]["runtimeClassName"] == "nvidia-doctor", "doctor.runtimeClassName ignored")
        if name == "upstream-values":
            pod, c = verbs["plugin"]
            env = {e["name"]: e.get("value") for e in c["env"]}
            # config.name: the ConfigMap's keys are the cluster's, so each node's label chooses (per-node configs)
            check(env.get("CONFIG_FILE_SRCDIR") == "/config" and env.get("DEFAULT_CONFIG") == "config.yaml"
                  and "CONFIG_FILE" not in env and env.get("GDS_ENABLED") == "true"
                  and env.get("NVIDIA_CDI_HOOK_PATH") == "/usr/local/nvidia/toolkit/nvidia-cdi-hook",
                  "upstream values not passed: %r" % env)
            vols = {v["name"]: v for v in pod["volumes"]}
            check(any(v.get("configMap", {}).get("name") == "my-plugin-config" for v in vols.values()),
                  "config.name not mounted")
            # (a map value is merged with the default by helm: null, not {}, removes the default affinity;
            # what stays is the image's architecture, nodeArchitectures)
            # and the plugin's pause label (check_pause)
            arch_only = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
                                      {"key": "nvidia.com/gpu.deploy.device-plugin", "operator": "NotIn",
                                       "values": PAUSED}]}]}}}
            check(pod.get("nodeSelector") == {"nvidia.com/gpu.present": "true"} and pod.get("affinity") == arch_only
                  and "priorityClassName" not in pod and "tolerations" not in pod,
                  "scheduling values not applied: %r" % {k: pod.get(k) for k in
                                                         ("nodeSelector", "affinity", "priorityClassName", "tolerations")})
            # the doctor reads the driver below /host like the plugin: without it, nvml.load-failed on
            # every GPU Operator node
            mpod, _ = verbs["mps-control-daemon"]
            check(mpod.get("nodeSelector") == {"nvidia.com/gpu.present": "true", "nvidia.com/mps.capable": "true"},
                  "mps nodeSelector with the values' %r" % mpod.get("nodeSelector"))
            _, dc = verbs["doctor"]
            denv = {e["name"]: e.get("value") for e in dc["env"]}
            check(denv.get("NVIDIA_DRIVER_ROOT") == "/run/nvidia/driver", "doctor lacks the driver root: %r" % denv)
            _, lc = verbs["labels"]
            lenv = {e["name"]: e.get("value") for e in lc["env"]}
            check(lenv.get("GFD_SLEEP_INTERVAL") == "30s" and lenv.get("GFD_NO_TIMESTAMP") == "true"
                  and lenv.get("MIG_STRATEGY") == "mixed", "gfd values not passed: %r" % lenv)


def check_exporter_rbac(docs, verbs):
    """The exporter's pods watch: its own ServiceAccount (its rules, exactly get/list/watch on pods: check_rbac's
    FEATURE_RULES) and token; the flags and the HPC mount as the values say (issue 35 item 6)."""
    pod, c = verbs["exporter"]
    sa = pod.get("serviceAccountName", "")
    check(sa.endswith("-exporter") and pod.get("automountServiceAccountToken") is True and
          any(d["kind"] == "ServiceAccount" and d["metadata"]["name"] == sa for d in docs),
          "the exporter's pods watch has no ServiceAccount of its own: %r" % sa)
    args = c["args"]
    for a in ("--kubernetes-enable-pod-labels=true", "--kubernetes-enable-pod-uid=true",
              "--kubernetes-pod-label-allowlist-regex=^app$", "--kubernetes-pod-label-allowlist-regex=^team,x$",
              "--hpc-job-mapping-dir=/var/run/slurm-gpu-jobs"):
        check(a in args, "exporter args lack %s: %r" % (a, args))
    # the rendered options are ones the exporter takes (a bad one is exit 2 before anything starts)
    with tempfile.TemporaryDirectory() as tmp:
        p = run([GPULET, "exporter", "--root", tmp, "--collect-interval=abc", *args], env=dict(os.environ))
    check(p.returncode == 2 and "--collect-interval 'abc'" in p.stderr, "exporter rejects its args: %s" % p.stderr)


def test_upstream_keys():
    values = chart_values()
    for key in UPSTREAM_KEYS:
        check(dig(values, key) is not KeyError, "values.yaml lacks upstream key %s" % key)
    path = os.path.join(SRC, "docs", "reference", "helm-chart.md")
    doc = open(path).read() if check(os.path.exists(path), "docs/reference/helm-chart.md missing") else ""
    for key in UPSTREAM_KEYS:
        check("`%s`" % key in doc, "docs/reference/helm-chart.md does not map %s" % key)


def test_bad_values():
    """Values gpulet cannot honour fail the render with a message that says what to set."""
    cases = [({"config": {"map": {"a": "version: v1", "b": "version: v1"}}}, "set config.default, or config.fallbackStrategies"),
             ({"config": {"map": {"a": "version: v1", "b": "version: v1"}, "followNodeLabel": False}},
              "set config.default"),
             ({"config": {"map": {"a": "version: v1"}, "name": "x"}}, "use one"),
             ({"config": {"map": {"a": "version: v1"}, "default": "b"}}, "is not a key of config.map")]
    for values, words in cases:
        try:
            helm_lib.template(values=values)
            check(False, "helm template accepted %r" % values)
        except RuntimeError as e:
            check(words in str(e), "helm template of %r: %s (expected %r)" % (values, e, words))
    # one config in the map is used without naming it (upstream's "single" fallback)
    docs = helm_lib.template(values={"config": {"map": {"only": "version: v1"}}})
    env = {e["name"]: e.get("value") for e in find(docs, "DaemonSet", "device-plugin")
           ["spec"]["template"]["spec"]["containers"][0]["env"]}
    check(env.get("CONFIG_FILE") == "/config/only", "single config: CONFIG_FILE %r" % env.get("CONFIG_FILE"))


def test_files_and_version():
    for name in CHART_FILES:
        src, dst = os.path.join(SRC, "deploy", name), os.path.join(CHART, "files", name)
        if check(os.path.exists(src) == os.path.exists(dst),
                 "deploy/%s and the chart's files/%s: one exists without the other (make chart-files)" % (name, name)):
            if os.path.exists(src):
                check(open(src, "rb").read() == open(dst, "rb").read(),
                      "the chart's files/%s differs from deploy/%s: run `make chart-files`" % (name, name))
    ver = re.search(r'set\(GPULET_VERSION "([^"]+)"\)', open(os.path.join(SRC, "CMakeLists.txt")).read()).group(1)
    meta = chart_meta()
    check(meta["version"] == ver and meta["appVersion"] == ver, "Chart.yaml %s/%s, gpulet %s"
          % (meta["version"], meta["appVersion"], ver))
    kust = yaml.safe_load(open(os.path.join(BASE, "kustomization.yaml")))
    check(kust["images"][0]["newTag"] == ver, "kustomization image tag %s, gpulet %s" % (kust["images"][0]["newTag"], ver))


def test_kustomize_base():
    with open(os.path.join(BASE, "gpulet.yaml")) as f:
        committed = f.read()
    check(committed == helm_lib.base_text(),
          "deploy/kustomize/base/gpulet.yaml is not the chart's render: run `make deploy-render`")
    _, kubectl = helm_lib.fetch()
    p = run([kubectl, "kustomize", BASE])
    if check(p.returncode == 0, "kubectl kustomize: %s" % p.stderr):
        out = [d for d in yaml.safe_load_all(p.stdout) if d]
        key = lambda d: (d["kind"], d["metadata"]["name"])  # noqa: E731
        check(sorted(map(key, out)) == sorted(map(key, helm_lib.load_base())), "kustomize lost or added objects")
        check(sorted(map(key, out)) == sorted(map(key, helm_lib.template(release="gpulet", namespace="kube-system"))),
              "kustomize base differs from the chart's objects")
    # the README's overlay: the base with the image moved to another registry
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "kustomization.yaml"), "w") as f:
            f.write("resources: [%s]\nimages: [{name: ghcr.io/gpulet/gpulet, newName: registry.example.com/gpulet}]\n"
                    % os.path.relpath(BASE, tmp))
        p = run([kubectl, "kustomize", tmp])
        images = set(re.findall(r"image: (\S+)", p.stdout))
        check(p.returncode == 0 and images == {"registry.example.com/gpulet:%s" % chart_meta()["appVersion"]},
              "overlay of the base: rc %d, images %s %s" % (p.returncode, images, p.stderr))
    # the base is a render of the defaults: it passes the same checks
    check_render("kustomize-base", {}, namespace="kube-system")


def doctor_container(docs):
    """The rendered doctor: (its container, [(host path, path below --root, hostPath type)])."""
    pod = find(docs, "DaemonSet", "doctor")["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    vols = {v["name"]: v for v in pod["volumes"]}
    root = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--root=")][0]
    mounts = []
    for m in c["volumeMounts"]:
        hp = vols[m["name"]].get("hostPath")
        where = m["mountPath"].rstrip("/")
        if hp and check(where == root or where.startswith(root + "/"), "doctor: %s mounted outside --root" % where):
            mounts.append((hp["path"], where[len(root):] or "/", hp.get("type", "")))
    return c, mounts


def test_doctor_mounts():
    """The doctor's host view, as Kubernetes 1.29 and 1.33 get it: never the host's /, /etc or
    /var/lib/kubelet whole, nothing that reaches kubelet's pki/ or other pods' dirs, every mount
    read-only, recursively read-only only where the API has the field (1.30+)."""
    for kube, rro in (("1.29.0", None), ("1.33.0", "IfPossible")):
        docs = helm_lib.template(kube_version=kube)
        pod = find(docs, "DaemonSet", "doctor")["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        vols = {v["name"]: v for v in pod["volumes"]}
        paths = []
        for m in c["volumeMounts"]:
            hp = vols[m["name"]].get("hostPath")
            if not hp:
                continue
            paths.append(hp["path"])
            check_reach("doctor@%s" % kube, hp["path"])
            check(m.get("readOnly") is True, "doctor@%s: %s not readOnly" % (kube, hp["path"]))
            check(m.get("recursiveReadOnly") == rro, "doctor@%s: %s recursiveReadOnly %r, expected %r"
                  % (kube, hp["path"], m.get("recursiveReadOnly"), rro))
        check(sorted(paths) == sorted(DOCTOR_READS), "doctor@%s mounts %s" % (kube, sorted(paths)))


def test_host_dev():
    """/dev below /host in the plugin and the doctor (issue 30 item 9): the host's /dev/shm and /dev/pts
    are hidden by an empty read-only volume on every Kubernetes version; the tree is recursively
    read-only where the API has the field (IfPossible from 1.30), or as hostMounts.recursiveReadOnly
    says; hostMounts.devMasks adds masks. The effect in a real pod: tests/k8s/test_k8s_chart_mounts.py."""
    for kube, values, rro, masks in (
            ("1.29.0", {}, None, ["/dev/shm", "/dev/pts"]),
            ("1.33.0", {}, "IfPossible", ["/dev/shm", "/dev/pts"]),
            ("1.33.0", {"hostMounts": {"recursiveReadOnly": "Enabled"}}, "Enabled", ["/dev/shm", "/dev/pts"]),
            ("1.31.0", {"hostMounts": {"devMasks": ["/dev/shm", "/dev/pts", "/dev/mqueue", "/dev/hugepages"]}},
             "IfPossible", ["/dev/shm", "/dev/pts", "/dev/mqueue", "/dev/hugepages"])):
        docs = helm_lib.template(values=values, kube_version=kube)
        for comp in ("device-plugin", "doctor"):
            what = "%s@%s %s" % (comp, kube, values)
            pod = find(docs, "DaemonSet", comp)["spec"]["template"]["spec"]
            (c,) = pod["containers"]
            vols = {v["name"]: v for v in pod["volumes"]}
            mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
            dev = mounts.get("/host/dev", {})
            check(vols.get(dev.get("name"), {}).get("hostPath", {}).get("path") == "/dev" and
                  dev.get("readOnly") is True and dev.get("recursiveReadOnly") == rro,
                  "%s: /host/dev is %r, want the host's /dev read-only, recursiveReadOnly %r" % (what, dev, rro))
            for m in masks:
                mm = mounts.get("/host" + m, {})
                check("emptyDir" in vols.get(mm.get("name"), {}) and mm.get("readOnly") is True,
                      "%s: the host's %s is not masked by an empty read-only volume: %r" % (what, m, mm))
            extra = sorted(p for p in mounts if p.startswith("/host/dev/") and p[len("/host"):] not in masks)
            check(not extra, "%s: other mounts below /host/dev: %s" % (what, extra))
    # the doctor's containerd config: the values' files and dirs, never the whole dir
    docs = helm_lib.template(values={"doctor": {"containerdConfig": [
        {"path": "/etc/containerd/config.toml", "type": "File"},
        {"path": "/opt/containerd/imports", "type": "Directory"}]}})
    pod = find(docs, "DaemonSet", "doctor")["spec"]["template"]["spec"]
    got = sorted((v["hostPath"]["path"], v["hostPath"]["type"]) for v in pod["volumes"]
                 if "containerd" in v.get("hostPath", {}).get("path", ""))
    check(got == [("/etc/containerd/config.toml", "File"), ("/opt/containerd/imports", "Directory")],
          "doctor.containerdConfig mounts %s" % got)


# ---- the doctor on a node seen through its mounts only ----

def scenarios_lib():
    spec = importlib.util.spec_from_file_location("scenarios_run", os.path.join(SRC, "tests", "scenarios", "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build_node(full, scen):
    """A healthy node as tests/scenarios builds one (mkroot + run.py's healthy()), with the running
    kubelet in /proc, kubeadm's units, DRM nodes, the fake NVML as the driver's libnvidia-ml, and a
    CDI spec `gpulet cdi generate` wrote from this node (so the spec names the driver's real files)."""
    fx_path = os.path.join(SRC, "tests", "fixtures", "dgx-a100.json")
    mk = run([os.path.join(SRC, "tests", "lib", "mkroot.sh"), full, fx_path, "--with-fakenvml", "--drm",
              "--kubeadm-unit", "--proc", "4242=/usr/bin/kubelet --config=/var/lib/kubelet/config.yaml "
              "--kubeconfig=/etc/kubernetes/kubelet.conf", "--build", BUILD])
    if not check(mk.returncode == 0, "mkroot: %s" % mk.stderr[-600:]):
        return None
    with open(fx_path) as f:
        fixture = json.load(f)
    scen.healthy(full, fixture)
    # sysfs as the kernel lays it out: /sys/bus/pci/devices/<id> are links into /sys/devices
    pci = os.path.join(full, "sys/bus/pci/devices")
    os.makedirs(os.path.join(full, "sys/devices/pci0000:00"))
    for dev in os.listdir(pci):
        os.rename(os.path.join(pci, dev), os.path.join(full, "sys/devices/pci0000:00", dev))
        os.symlink("../../../devices/pci0000:00/" + dev, os.path.join(pci, dev))
    os.makedirs(os.path.join(full, "usr/local/nvidia/toolkit"), exist_ok=True)
    hook = os.path.join(full, "usr/bin/nvidia-ctk")
    with open(hook, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(hook, 0o755)
    os.makedirs(os.path.join(full, "var/run/cdi"), exist_ok=True)
    g = run([GPULET, "cdi", "generate", "--root", full, "--nvidia-cdi-hook-path", "/usr/bin/nvidia-ctk",
             "--output", os.path.join(full, "var/run/cdi/nvidia.com-gpu.yaml")], env=nvml_env(fx_path))
    check(g.returncode == 0, "cdi generate on the fake node: %s" % g.stderr[-600:])
    # the plugin generated that spec; /etc/cdi's hand-written one defines the same names: drop it
    os.unlink(os.path.join(full, "etc/cdi/nvidia.json"))
    return fx_path


def nvml_env(fixture, extra=None):
    env = dict(os.environ, FAKE_NVML_FIXTURE=fixture, **(extra or {}))
    if SANITIZED:  # keep the fake NVML mapped past dlclose, as plugin_lib.Harness.plugin_env explains
        env["LD_PRELOAD"] = FAKE_NVML_LIB
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    return env


def copy_view(full, view, mounts):
    """What the pod sees below --root: each hostPath of the node copied to its mount path, nothing
    else; a missing path as kubelet treats it (created empty for *OrCreate and no type, else the
    pod does not start)."""
    ok = True
    for host, below, typ in mounts:
        src, dst = os.path.join(full, host.lstrip("/")), os.path.join(view, below.lstrip("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.lexists(src):
            cp = run(["cp", "-a", "-H", "--", src, dst])  # -H: kubelet follows a symlinked hostPath
            ok &= check(cp.returncode == 0, "copy %s: %s" % (host, cp.stderr))
        elif typ in ("", "DirectoryOrCreate"):
            os.makedirs(dst)
        elif typ == "FileOrCreate":
            open(dst, "w").close()
        else:
            ok &= check(False, "the doctor pod would not start on this healthy node: hostPath %s (type %s) "
                        "is missing" % (host, typ))
    return ok


def serve_kubelet(root, stack, podres=True):
    """The node's kubelet and plugin answering, as --live expects: listeners on kubelet.sock and the
    plugin sockets, the PodResources stand-in (tests/integration/podres_standin.py) on its socket."""
    dp = os.path.join(root, "var/lib/kubelet/device-plugins")
    for name in os.listdir(dp):
        if name.endswith(".sock"):
            path = os.path.join(dp, name)
            os.unlink(path)
            s = socket.socket(socket.AF_UNIX)
            s.bind(path)
            s.listen(8)
            stack.append(s.close)
    if not podres:
        return True
    sock = os.path.join(root, "var/lib/kubelet/pod-resources/kubelet.sock")
    ready = os.path.join(os.path.dirname(root), os.path.basename(root) + ".podres-ready")
    if os.path.exists(ready):
        os.unlink(ready)
    standin = subprocess.Popen(["/usr/bin/python3", os.path.join(SRC, "tests", "integration", "podres_standin.py"),
                                sock, os.path.join(SRC, "tests", "scenarios", "alloc-live-podres-ok", "podres.json"),
                                "--ready", ready], stderr=subprocess.DEVNULL)
    stack.append(lambda: (standin.terminate(), standin.wait()))
    for _ in range(200):
        if os.path.exists(ready):
            return True
        time.sleep(0.05)
    return check(False, "podres stand-in did not start on %s" % sock)


def doctor_findings(root, c, fixture, wrap=(), podres=True):
    """`gpulet doctor` as the DaemonSet runs it (its args and env), once, on root: (rc, {id: severity}, doc).
    wrap: a command to run it under (strace)."""
    args = [a for a in c["args"] if not a.startswith(("--root=", "--serve-metrics=", "--interval="))]
    env = nvml_env(fixture, {e["name"]: e["value"] for e in c.get("env", []) if "value" in e})
    if wrap:  # LeakSanitizer cannot run under ptrace: the sanitizer build's leak check is off then
        env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    stack = []
    try:
        if not serve_kubelet(root, stack, podres):
            return None, {}, {}
        p = run([*wrap, GPULET, "doctor", "--root", root, "--json", *args], env=env)
    finally:
        for close in reversed(stack):
            close()
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        check(False, "doctor --root %s: not JSON (rc %d): %s %s" % (root, p.returncode, p.stdout[:300], p.stderr[:300]))
        return None, {}, {}
    return p.returncode, {f["id"]: f["severity"] for f in doc["findings"]}, doc


# What the doctor reads on a node and the chart leaves out on purpose (docs/reference/helm-chart.md §4,
# values.yaml): /proc/<pid> (the running kubelet's command line: other processes' roots and environment
# sit beside it), kubelet's env files and unit drop-ins under /etc (they too only name its --root-dir);
# /var/log holds every pod's logs (doctor.kernelLog mounts it); pods/ holds other pods' secrets (with
# --live the PodResources socket answers instead).
NOT_MOUNTED = ("/proc", "/var/lib/kubelet/kubeadm-flags.env", "/etc/default/kubelet", "/etc/sysconfig/kubelet",
               "/etc/systemd/system", "/run/systemd/system", "/etc/rancher", "/var/log", "/var/lib/kubelet/pods")
# the one difference that makes in what the doctor says: where the kubelet root dir's answer came from
# (the running kubelet on the node, its unit file in the pod); the dir itself must be the same
ROOT_DIR_SOURCE = re.compile(r"^(kubelet's root dir \S+): .*")


def under(path, dirs):
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


def doctor_reads(full, c, fixture):
    """Every path below the node root that `gpulet doctor` (as the DaemonSet runs it) opens, stats,
    lists or follows and that exists there: the code's own answer to "what does the doctor read"."""
    trace = os.path.join(os.path.dirname(full), "doctor.strace")
    doctor_findings(full, c, fixture, ["strace", "-f", "-qq", "-s", "4096", "-e", "trace=%file", "-o", trace])
    seen = set()
    with open(trace) as f:
        for p in re.findall(r'"(%s/[^"]*)"' % re.escape(full), f.read()):
            if os.path.lexists(p):
                seen.add("/" + os.path.relpath(p, full))
    return seen


UNSEEN = re.compile(r"unreadable|not mounted|permission denied|cannot read|no such file", re.I)


def compare_view(label, tmp, full, fixture, values, kube="1.33.0"):
    n_fails = len(FAILS)
    c, mounts = doctor_container(helm_lib.template(values=values, kube_version=kube))
    view = os.path.join(tmp, label)
    if not copy_view(full, view, mounts):
        return
    rc_full, got_full, doc_full = doctor_findings(full, c, fixture)
    rc_view, got_view, doc = doctor_findings(view, c, fixture)
    # what each finding says, paths below the root written as host paths; a check that read less in the
    # pod says something else. Not mounted without doctor.kernelLog: the kernel log, and the doctor says so.
    said = lambda d, root: {f["id"]: (f["summary"], [ROOT_DIR_SOURCE.sub(r"\1", e.replace(root, ""))  # noqa: E731
                                                     for e in f["evidence"]]) for f in d.get("findings", [])}
    s_full, s_view = said(doc_full, full), said(doc, view)
    if not (values.get("doctor") or {}).get("kernelLog"):
        kl = s_view.get("kernel-log.ok", ("",))
        check("no kernel log" in kl[0], "%s: kernel-log.ok %r" % (label, kl))
        s_full.pop("kernel-log.ok", None), s_view.pop("kernel-log.ok", None)
    for i in sorted(set(s_full) & set(s_view)):
        check(s_full[i] == s_view[i], "%s: %s says %r through the mounts, %r on the whole node"
              % (label, i, s_view[i], s_full[i]))
    check(got_view == got_full and rc_view == rc_full,
          "%s: the doctor through the chart's mounts differs from the whole node: rc %s vs %s, only in the "
          "view %s, only on the node %s" % (label, rc_view, rc_full, sorted(set(got_view.items()) - set(got_full.items())),
                                            sorted(set(got_full.items()) - set(got_view.items()))))
    for f in doc.get("findings", []):
        text = " ".join([f["id"], f["summary"], *f["evidence"]])
        check(f["severity"] == "ok" or not UNSEEN.search(text),
              "%s: %s says an input is unreadable: %s" % (label, f["id"], text[:400]))
    # a check skipped for want of input in the pod but not on the whole node lacks a mount; what the
    # DaemonSet never has (--pods, --events) skips the same checks on both
    skipped = lambda d, root: sorted((x["check"], x["reason"].replace(root, ""))  # noqa: E731
                                     for x in d.get("skipped", []) if "reason" in x)
    check(skipped(doc, view) == skipped(doc_full, full), "%s: checks skipped for want of input through the mounts "
          "%s, on the whole node %s" % (label, skipped(doc, view), skipped(doc_full, full)))
    if len(FAILS) == n_fails:
        print("PASS doctor view %s: %d findings as on the whole node (rc %s)" % (label, len(got_view), rc_view))
    if label == "defaults":
        # kubelet's PodResources down: other pods' dirs are not there to look at instead, and the
        # doctor says it cannot tell rather than call every allocation stale
        rc, got, doc = doctor_findings(view, c, fixture, podres=False)
        why = [s.get("reason", "") for s in doc.get("skipped", []) if s.get("check") == "alloc"]
        check(rc == 0 and "alloc.held-by-terminated-pod" not in got and why and "not mounted" in why[0],
              "PodResources down in the doctor pod: rc %s, %s, alloc skipped %r" % (rc, got, why))
    return got_view


def test_doctor_view():
    """The doctor's mounts are complete: on a healthy node copied through only the rendered DaemonSet's
    hostPaths, `gpulet doctor --root` (as the DaemonSet runs it, --live included) reports the same
    findings as on the whole node, no failure, nothing unreadable and no check skipped for want of
    input that the whole node has."""
    scen = scenarios_lib()
    tmp = tempfile.mkdtemp(prefix="dv-", dir="/tmp")  # short: socket paths must fit sun_path
    try:
        full = os.path.join(tmp, "node")
        fixture = build_node(full, scen)
        if not fixture:
            return
        # every existing input the doctor's code touches on the whole node is mounted, or left out on purpose
        c, mounts = doctor_container(helm_lib.template())
        reads = doctor_reads(full, c, fixture)
        missing = sorted(p for p in reads if not under(p, [m[0] for m in mounts]) and not under(p, NOT_MOUNTED))
        check(len(reads) > 100 and not missing, "the doctor reads %d paths on the node; not mounted in its pod: %s"
              % (len(reads), missing))
        got = compare_view("defaults", tmp, full, fixture, {})
        if got is not None:
            check(all(s == "ok" for s in got.values()), "healthy node: %s" % got)
            check({"cdi.ok", "runtime.ok", "kubelet.ok", "plugin.ok", "alloc.ok", "nvml.ok"} <= set(got),
                  "healthy node: checks did not run: %s" % sorted(got))
        compare_view("defaults-k8s-1.29", tmp, full, fixture, {}, "1.29.0")
        # a critical XID in kern.log: seen through the mounts only with doctor.kernelLog
        with open(os.path.join(full, "var/log/kern.log"), "a") as f:
            f.write("Dec  2 11:00:00 node kernel: [ 3600.2] NVRM: Xid (PCI:0000:07:00): 79, pid=0, name=none, "
                    "GPU has fallen off the bus.\n")
        got = compare_view("kernel-log", tmp, full, fixture, {"doctor": {"kernelLog": True}})
        check(got is None or got.get("gpu.fallen-off-bus") == "fail", "kernelLog: the XID was not seen: %s" % got)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    for t in (test_files_and_version, test_upstream_keys, test_bad_values, test_matrix, test_doctor_mounts,
              test_host_dev, test_doctor_view, test_kustomize_base):
        n = len(FAILS)
        t()
        print("%s %s" % ("PASS" if len(FAILS) == n else "FAIL", t.__name__))
    if FAILS:
        raise SystemExit("FAIL: %d problems (first: %s)" % (len(FAILS), FAILS[0]))
    print("PASS helm chart")


if __name__ == "__main__":
    main()
