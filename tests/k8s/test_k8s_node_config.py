#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Per-node configs (issue 32 item 2, docs/reference/config-manager.md) on the real node of node.py:
kube-apiserver, kubelet and containerd judge what gpulet's plugin advertises, the Node's labels are
changed with kubectl, and the Events are read back from the API server.

  * gpulet plugin, labels and mps-control-daemon follow nvidia.com/device-plugin.config themselves
    (--config-file-srcdir over a dir laid out as kubelet lays out a ConfigMap volume): no label ->
    the "default" config (fallback named): nvidia.com/gpu 8; label ts2 (time-slicing, 2 replicas) ->
    16 and the GFD sharing labels; a label naming a config that does not load, or none that exists,
    keeps 16 and puts a Warning Event on the Node; kube-apiserver restarted, the label removed -> 8
    (the watch came back by itself); the plugin started while the label names a broken config starts
    with the default, says so in an Event, and follows the next label;
  * the GPU Operator's pod (its config-manager init container and sidecar, upstream's command and
    env: assets/state-device-plugin/0500_daemonset.yaml and object_controls.go's transform), run with
    gpulet's binary under the names config-manager and nvidia-device-plugin, in-cluster from a
    service-account token: the sidecar links the label's config and sends SIGHUP to the plugin
    container's process in the shared process namespace: 8 -> 16 -> 8.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node import (BUILD, BUSYBOX_IMAGE, FAKE_NVML_LIB, GPULET, KUBELET_ROOT, NODE_NAME, Node,  # noqa: E402
                  NodeError)
from podcheck import check  # noqa: E402

LABEL = "nvidia.com/device-plugin.config"
CONFIGS = {
    "default": "version: v1\n",
    "ts2": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n",
    # a config that exists but does not load: gpulet keeps the running one
    "broken": "version: v1\nflags:\n  migStrategy: sideways\n",
}


def configmap_dir(path, configs):
    """A dir as kubelet mounts a ConfigMap: ..<ts>/<key>, ..data -> ..<ts>, <key> -> ..data/<key>."""
    ts = os.path.join(path, "..2026_01_01_00_00_00.1")
    os.makedirs(ts)
    os.symlink(os.path.basename(ts), os.path.join(path, "..data"))
    for k, v in configs.items():
        with open(os.path.join(ts, k), "w") as f:
            f.write(v)
        os.symlink("..data/" + k, os.path.join(path, k))


def label(node, value):
    node.kubectl("label", "node", NODE_NAME, "--overwrite", "%s=%s" % (LABEL, value) if value else LABEL + "-")


def warnings(node, component):
    return [m for r, c, m in node.events_of(NODE_NAME) if r == "ConfigNotApplied" and c == component]


def wait_warning(node, component, words, before):
    return node.wait("a ConfigNotApplied Event from %s saying %r" % (component, words),
                     lambda: [m for m in warnings(node, component)[before:] if words in m], timeout=30)


def gfd_labels(node):
    with open(os.path.join(node.root, "etc/kubernetes/node-feature-discovery/features.d/gfd")) as f:
        return dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)


def follow_args(node, srcdir):
    return ["--kubeconfig", os.path.join(node.t, "admin.kubeconfig"), "--node-name", NODE_NAME,
            "--config-file-srcdir", srcdir, "--fallback-strategies", "named,single"]


def test_daemons_follow(node, srcdir):
    # started by Node.start() with per-node configs: no label, the config "default"
    check("by=named" in node.log_tail("plugin", 20000), "the plugin chose its first config by the named fallback")
    os.makedirs(os.path.join(node.root, "etc/kubernetes/node-feature-discovery/features.d"))
    node.spawn("labels", [GPULET, "labels", "--root", node.root, "--nvml-library", FAKE_NVML_LIB, "--no-timestamp",
                          *follow_args(node, srcdir)], env=node.plugin_env())
    node.spawn("mps", [GPULET, "mps-control-daemon", "--root", node.root, "--driver-root", node.root,
                       "--nvml-library", FAKE_NVML_LIB, "--mps-root", os.path.join(node.t, "mps"),
                       *follow_args(node, srcdir)], env=node.plugin_env())
    node.wait("labels without sharing", lambda: gfd_labels(node).get("nvidia.com/gpu.replicas") == "1",
              proc="labels")

    label(node, "ts2")
    node.wait_node_ready_for_gpus(count="16")
    node.wait("the GFD sharing labels of ts2",
              lambda: gfd_labels(node).get("nvidia.com/gpu.sharing-strategy") == "time-slicing" and
              gfd_labels(node).get("nvidia.com/gpu.replicas") == "2", proc="labels")
    node.wait("mps-control-daemon took ts2", lambda: 'config="ts2"' in node.log_tail("mps", 20000), proc="mps")
    print("PASS label ts2: nvidia.com/gpu 8 -> 16, GFD labels replicas=2 time-slicing, mps-control-daemon follows")

    for bad, words in (("broken", "sideways"), ("nope", "does not exist")):
        before = {c: len(warnings(node, c)) for c in ("gpulet-plugin", "gpulet-labels")}
        label(node, bad)
        for component in before:
            msg = wait_warning(node, component, words, before[component])
            check('keeping the running config "ts2"' in msg[0], "%s's Event: %s" % (component, msg))
        node.wait("the plugin's refusal in its log", lambda: "Config reload failed, keeping the running config"
                  in node.log_tail("plugin", 4000) and words in node.log_tail("plugin", 4000), proc="plugin")
        check(node.gpu_capacity() == ("16", "16"), "a refused config changed nvidia.com/gpu: %s" % (node.gpu_capacity(),))
        check(gfd_labels(node).get("nvidia.com/gpu.replicas") == "2", "labels after %s: %s" % (bad, gfd_labels(node)))
        print("PASS label %s: Warning Event ConfigNotApplied (%s), nvidia.com/gpu stays 16" % (bad, words))

    # the watches outlive kube-apiserver: the label removed after a restart still reaches them
    node.stop_proc("kube-apiserver")
    node._apiserver()
    label(node, None)
    node.wait_node_ready_for_gpus(count="8")
    node.wait("labels back to no sharing", lambda: gfd_labels(node).get("nvidia.com/gpu.replicas") == "1",
              proc="labels")
    print("PASS kube-apiserver restarted, label removed: nvidia.com/gpu 16 -> 8 (the default), labels follow")

    # started while the label names a config that does not load: the default, said in an Event
    node.stop_plugin()
    label(node, "broken")
    before = len(warnings(node, "gpulet-plugin"))
    node.start_plugin(*node.plugin_args)
    msg = wait_warning(node, "gpulet-plugin", "starting with the config of a node without the label", before)
    check("sideways" in msg[0], "the start Event names the error: %s" % msg)
    node.wait_node_ready_for_gpus(count="8")
    label(node, "ts2")
    node.wait_node_ready_for_gpus(count="16")
    label(node, None)
    node.wait_node_ready_for_gpus(count="8")
    print("PASS plugin started with a broken label: the default (8) and an Event, then ts2 (16) and back")
    node.stop_proc("labels")
    node.stop_proc("mps")


# -- the GPU Operator's pod with gpulet's image ---------------------------------------------------
def operator_env(oneshot):
    """config-manager's env as the Operator's asset and transform give it (DEFAULT_CONFIG from
    devicePlugin.config.default, FALLBACK_STRATEGIES empty)."""
    env = {"ONESHOT": "true" if oneshot else "false", "KUBECONFIG": "", "NODE_LABEL": LABEL,
           "CONFIG_FILE_SRCDIR": "/available-configs", "CONFIG_FILE_DST": "/config/config.yaml", "DEFAULT_CONFIG": "",
           "SEND_SIGNAL": "false" if oneshot else "true", "SIGNAL": "" if oneshot else "1",
           "PROCESS_TO_SIGNAL": "" if oneshot else "nvidia-device-plugin", "FALLBACK_STRATEGIES": "empty"}
    return [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}] + \
        [{"name": k, "value": v} for k, v in env.items()]


def test_operator_pod(node):
    node.stop_plugin()
    node.wait("nvidia.com/gpu gone with the plugin", lambda: node.gpu_capacity()[1] in ("0", None))
    node.kubectl("create", "serviceaccount", "gpu-operator")
    token = node.kubectl("create", "token", "gpu-operator", "--duration", "1h")[1].strip()
    node.kubectl("create", "secret", "generic", "gpu-operator-token", "--from-literal=token=" + token,
                 "--from-file=ca.crt=" + os.path.join(node.certs, "ca.crt"), "--from-literal=namespace=default")
    node.kubectl("create", "configmap", "plugin-configs", *("--from-literal=%s=%s" % kv for kv in CONFIGS.items()
                                                           if kv[0] != "broken"))
    # the image's links: config-manager and nvidia-device-plugin are gpulet
    bindir = os.path.join(node.t, "imagebin")
    os.makedirs(bindir)
    for name in ("config-manager", "nvidia-device-plugin"):
        os.symlink(os.path.realpath(GPULET), os.path.join(bindir, name))
    host = lambda name, path: {"name": name, "hostPath": {"path": path}}  # noqa: E731
    ro = lambda name, path: {"name": name, "mountPath": path, "readOnly": True}  # noqa: E731
    libs = [("usr", "/usr"), ("lib", "/lib"), ("lib64", "/lib64"), ("ldcache", "/etc/ld.so.cache"),
            ("build", os.path.realpath(BUILD)), ("testdir", node.t), ("imagebin", "/imagebin")]
    volumes = [host(n, p if n != "imagebin" else bindir) for n, p in libs] + [
        host("device-plugin", KUBELET_ROOT + "/device-plugins"),
        {"name": "sa", "secret": {"secretName": "gpu-operator-token"}},
        {"name": "plugin-configs", "configMap": {"name": "plugin-configs"}}, {"name": "config", "emptyDir": {}}]
    common_mounts = [ro(n, p) if n != "testdir" else {"name": n, "mountPath": p} for n, p in libs] + [ro("sa", "/var/run/secrets/kubernetes.io/serviceaccount")]
    config_mounts = [{"name": "config", "mountPath": "/config"},
                     {"name": "plugin-configs", "mountPath": "/available-configs"}]
    # in-cluster as client-go finds it (no kube-proxy here: the API server's address itself)
    incluster = [{"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
                 {"name": "KUBERNETES_SERVICE_PORT", "value": "6443"}, {"name": "PATH", "value": "/imagebin:/bin"}]
    fake = node.plugin_env()
    plugin_env = [{"name": k, "value": v} for k, v in {
        "CONFIG_FILE": "/config/config.yaml", "GPULET_NVML_LIBRARY": FAKE_NVML_LIB, "GPULET_ROOT": node.root,
        "NVIDIA_DRIVER_ROOT": node.root, "NVIDIA_CDI_HOOK_PATH": node.hook, "DEVICE_LIST_STRATEGY": "cdi-cri",
        "DP_DEVICE_PLUGIN_PATH": KUBELET_ROOT + "/device-plugins",
        "KUBELET_SOCKET": KUBELET_ROOT + "/device-plugins/kubelet.sock",
        "FAKE_NVML_FIXTURE": fake["FAKE_NVML_FIXTURE"], "FAKE_NVML_EVENTS": fake["FAKE_NVML_EVENTS"]}.items()]
    ctr = lambda name, command, env, mounts: {  # noqa: E731
        "name": name, "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never", "command": command,
        "env": incluster + env, "volumeMounts": common_mounts + mounts}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nvidia-device-plugin", "namespace": "default"},
           "spec": {"nodeName": NODE_NAME, "hostNetwork": True, "automountServiceAccountToken": False,
                    "enableServiceLinks": False, "shareProcessNamespace": True, "terminationGracePeriodSeconds": 5,
                    "serviceAccountName": "gpu-operator", "volumes": volumes,
                    "initContainers": [ctr("config-manager-init", ["config-manager"], operator_env(True), config_mounts)],
                    "containers": [
                        ctr("nvidia-device-plugin", ["nvidia-device-plugin"], plugin_env,
                            config_mounts + [{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"}]),
                        ctr("config-manager", ["config-manager"], operator_env(False), config_mounts)]}}
    node.kubectl("apply", "-f", "-", stdin=json.dumps(pod))
    try:
        node.wait("the pod's plugin serving nvidia.com/gpu 8 (no label: FALLBACK_STRATEGIES=empty, no config file)",
                  lambda: node.gpu_capacity() == ("8", "8"), timeout=120)
        logs = lambda c: node.kubectl("logs", "nvidia-device-plugin", "-c", c, check=False)[1]  # noqa: E731
        check("/dev/null" in logs("config-manager-init"), "init: %s" % logs("config-manager-init")[-2000:])
        label(node, "ts2")
        node.wait("the sidecar's SIGHUP: nvidia.com/gpu 16", lambda: node.gpu_capacity() == ("16", "16"), timeout=60)
        side = logs("config-manager")
        check("Successfully sent signal" in side and "process=nvidia-device-plugin" in side, "sidecar: %s" % side[-2000:])
        check("SIGHUP: reloading the config" in logs("nvidia-device-plugin"), "the plugin container got no SIGHUP")
        label(node, None)
        node.wait("back to the empty config: nvidia.com/gpu 8", lambda: node.gpu_capacity() == ("8", "8"), timeout=60)
        print("PASS the Operator's config-manager init + sidecar pod with gpulet's binary: 8 -> 16 -> 8 by the label")
    except NodeError:
        for c in ("config-manager-init", "nvidia-device-plugin", "config-manager"):
            sys.stderr.write("--- %s\n%s\n" % (c, node.kubectl("logs", "nvidia-device-plugin", "-c", c,
                                                                check=False)[1][-3000:]))
        raise
    finally:
        node.delete_pod("nvidia-device-plugin")


def test_node_config():
    t0 = time.time()
    with Node() as node:
        srcdir = os.path.join(node.t, "available-configs")
        os.makedirs(srcdir)
        configmap_dir(srcdir, CONFIGS)
        node.start(plugin_args=("--device-list-strategy=cdi-cri", *follow_args(node, srcdir)))
        test_daemons_follow(node, srcdir)
        test_operator_pod(node)
    print("PASS test_node_config (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_node_config()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
