#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The GPU Operator's operands on gpulet's image, unchanged, on the real node (docs/reference/operator.md).

gpulet's image (`make image`, its OCI layout imported into the node's containerd) runs in the pods the
Operator's controller renders from its assets (gpu-operator v26.7.0 assets/state-device-plugin,
gpu-feature-discovery, state-mps-control-daemon, state-dcgm-exporter and controllers/object_controls.go),
written here in our own words with their commands, args, env and volumes, for this ClusterPolicy:
cdi.enabled (the default), mig.strategy mixed (the fixture has MIG GPUs), toolkit.installDir a dir of
this test, devicePlugin.config unset (the controller then drops config-manager), hostNetwork for each
(the node has no CNI), a driver container's root at /run/nvidia/driver:

  * device plugin: `/bin/sh -c /bin/entrypoint.sh` with the Operator's ConfigMap script mounted there (its
    statements; tests/fixtures/operator/entrypoint-modules.sh) waits for the validator's driver-ready
    file, then registers: the node's nvidia.com/gpu capacity appears, its CDI spec (in /var/run/cdi,
    hooks at <toolkit.installDir>/toolkit/nvidia-cdi-hook) gives a GPU pod its device node;
  * GPU Feature Discovery: `gpu-feature-discovery` writes the labels to the features.d volume;
  * dcgm-exporter: no command; /metrics on :9400 has every GPU, and the GPU pod's GPU attributed to it;
  * MPS control daemon: its mount-shm init container mounts the tmpfs at /run/nvidia/mps/shm on the host
    (Bidirectional), the daemon runs in the host's pid namespace and waits (no MPS config);
  * with devicePlugin.config set, the controller adds config-manager: its init container (gpulet's
    config-manager, docs/reference/config-manager.md) links /config/config.yaml to the config the node's
    nvidia.com/device-plugin.config label names, or DEFAULT_CONFIG without the label, and the plugin
    serves that config; when the label changes the sidecar links the new one and SIGHUPs the plugin
    (shareProcessNamespace), which reloads with it; a new pod's init container follows the label.

Left out, as they are not gpulet's image: the validator's init containers (the test writes its files).
Test-only additions, each in TEST_ENV/TEST_VOLUMES or with_kubeconfig(): the fake NVML (GPULET_NVML_LIBRARY
and its fixture), which the nvidia runtime's injection of the driver stands in for on a GPU node, the GFD
output dir on a test dir instead of the host's /etc/kubernetes, and config-manager's API credential (a
kubeconfig of the Operator's account: this cluster mounts no service-account tokens). Exit 77 only where `make image` cannot run."""
import base64
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from node import BUILD, FAKE_NVML_LIB, GPULET, NODE_NAME, SRC, Node, NodeError  # noqa: E402
from podcheck import check, gpu_nodes, parse, probe_script, spec  # noqa: E402

IMAGE = "gpulet.test/gpulet:operator"
NS = "gpu-operator"
SCRIPT = os.path.join(SRC, "tests", "fixtures", "operator", "entrypoint-modules.sh")
DRIVER = "/run/nvidia/driver"  # DefaultDriverInstallDir
MPS = "/run/nvidia/mps"  # DefaultMPSRoot


def image_tarball(tmp):
    """`make image` (tests/integration/test_image.py builds it), its OCI layout named IMAGE for containerd."""
    sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
    from test_image import build_image
    build_image()
    out = os.path.join(tmp, "gpulet-image.tar")
    with tarfile.open(os.path.join(BUILD, "image", "oci.tar")) as src, tarfile.open(out, "w") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read() if m.isfile() else None
            if m.name.lstrip("./") == "index.json":
                index = json.loads(data)
                for man in index["manifests"]:
                    man.setdefault("annotations", {})["io.containerd.image.name"] = IMAGE
                data = json.dumps(index).encode()
                m.size = len(data)
            dst.addfile(m, io.BytesIO(data) if data is not None else None)
    return out


def env(d):
    return [{"name": k, "value": v} for k, v in d.items()]


def field(name, path):
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def host(name, path, typ=None):
    v = {"name": name, "hostPath": {"path": path}}
    if typ:
        v["hostPath"]["type"] = typ
    return v


class Rig:
    """The node, the ClusterPolicy's values this test renders with, the test-only NVML."""

    def __init__(self, node):
        self.node = node
        self.toolkit = os.path.join(node.t, "toolkit")  # ClusterPolicy toolkit.installDir
        self.features = os.path.join(node.t, "features.d")
        self.test_env = env({"GPULET_NVML_LIBRARY": "/gpulet-test/nvml/libnvidia-ml.so.1",
                             "FAKE_NVML_FIXTURE": "/gpulet-test/fixture.json",
                             "FAKE_NVML_EVENTS": "/gpulet-test/events"})
        self.test_mounts = [{"name": "gpulet-test-nvml", "mountPath": "/gpulet-test/nvml", "readOnly": True},
                            {"name": "gpulet-test-fixture", "mountPath": "/gpulet-test/fixture.json", "readOnly": True},
                            {"name": "gpulet-test-events", "mountPath": "/gpulet-test/events", "readOnly": True}]
        self.test_volumes = [host("gpulet-test-nvml", os.path.dirname(FAKE_NVML_LIB)),
                             host("gpulet-test-fixture", node.fixture), host("gpulet-test-events", node.events_file)]

    def prepare(self):
        """What the Operator's other operands leave on the node: the driver container's root at
        /run/nvidia/driver, the toolkit's hook, the validations dir, the MPS root; the node labels its
        controller sets."""
        n = self.node
        hook = os.path.join(self.toolkit, "toolkit", "nvidia-cdi-hook")
        os.makedirs(os.path.dirname(hook))
        os.symlink(os.path.realpath(GPULET), hook)  # gpulet answers as nvidia-cdi-hook
        os.makedirs(self.features)
        # the host's /proc/driver as the fake node has it (MIG minors), where /host shows it to the plugin; but
        # for the params file, which the CDI hook would then look for in the GPU pod's own /proc (a kernel
        # without NVIDIA's driver here has none there)
        procdriver = os.path.join(n.t, "proc-driver")
        shutil.copytree(os.path.join(n.root, "proc", "driver"), procdriver, symlinks=True)
        os.unlink(os.path.join(procdriver, "nvidia", "params"))
        script = ["set -e", "mkdir -p %s /run/nvidia/validations %s" % (DRIVER, MPS),
                  "mount --bind %s %s" % (n.root, DRIVER), "mount --bind %s /proc/driver" % procdriver,
                  # shared, as / is on a systemd host: HostToContainer and Bidirectional mounts need it (inside
                  # the node's own mount namespace, which is private to the machine)
                  "mount --make-rshared /"]
        p = subprocess.run(n.ns(["sh", "-c", "\n".join(script)]), capture_output=True, text=True)
        check(p.returncode == 0, "preparing the node: %s" % p.stderr)
        n.kubectl("create", "namespace", NS)
        n.kubectl("label", "node", NODE_NAME, "nvidia.com/gpu.deploy.device-plugin=true",
                  "nvidia.com/gpu.deploy.gpu-feature-discovery=true", "nvidia.com/gpu.deploy.dcgm-exporter=true",
                  "nvidia.com/mps.capable=true")
        with open(SCRIPT) as f:
            cm = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "nvidia-device-plugin-entrypoint", "namespace": NS},
                  "data": {"entrypoint.sh": f.read()}}
        n.kubectl("apply", "-f", "-", stdin=json.dumps(cm))

    def grant_device_plugin(self):
        """The Operator's account of the plugin's pods and its rules (gpu-operator assets/state-device-plugin:
        0100_service_account.yaml, 0210_clusterrole.yaml: nodes get, list, watch; 0310_clusterrolebinding.yaml);
        a kubeconfig of a token of that account (path), the cluster's CA inline."""
        n = self.node
        name = "nvidia-device-plugin"
        objs = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": NS}},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
                 "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                 "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NS}]}]
        n.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
        token = n.kubectl("create", "token", name, "-n", NS, "--duration", "1h")[1].strip()
        with open(os.path.join(n.certs, "ca.crt"), "rb") as f:
            ca = base64.b64encode(f.read()).decode()
        cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
               "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443",
                                                     "certificate-authority-data": ca}}],
               "users": [{"name": "u", "user": {"token": token}}],
               "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u", "namespace": NS}}]}
        path = os.path.join(n.t, "kubeconfig-" + name)
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def validator_ready(self):
        """The validator's driver-ready file for a driver container (cmd/nvidia-validator getDriverInfo)."""
        body = ("IS_HOST_DRIVER=false\\nNVIDIA_DRIVER_ROOT=%s\\nDRIVER_ROOT_CTR_PATH=/driver-root\\n"
                "NVIDIA_DEV_ROOT=%s\\nDEV_ROOT_CTR_PATH=/driver-root\\n" % (DRIVER, DRIVER))
        p = subprocess.run(self.node.ns(["sh", "-c", "printf '%s' > /run/nvidia/validations/.r && "
                                         "mv /run/nvidia/validations/.r /run/nvidia/validations/driver-ready" % body]),
                           capture_output=True, text=True)
        check(p.returncode == 0, "driver-ready: %s" % p.stderr)

    def pod(self, name, spec_):
        """A pod of the template (nodeName set: no scheduler here), test additions on gpulet's containers."""
        for c in spec_["containers"] + spec_.get("initContainers", []):
            c["image"], c["imagePullPolicy"] = IMAGE, "Never"
            c["env"] = c.get("env", []) + self.test_env
            c["volumeMounts"] = c.get("volumeMounts", []) + self.test_mounts
        spec_["volumes"] = spec_.get("volumes", []) + self.test_volumes
        spec_.update({"nodeName": NODE_NAME, "hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet",
                      "priorityClassName": "system-node-critical", "enableServiceLinks": False,
                      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                      "terminationGracePeriodSeconds": 2})
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec_}
        self.node.kubectl("apply", "-f", "-", stdin=json.dumps(pod))

    def logs(self, name, container=None):
        args = ["logs", "-n", NS, name] + (["-c", container] if container else [])
        return self.node.kubectl(*args, check=False)[1]

    def status(self, name):
        return json.loads(self.node.kubectl("get", "pod", "-n", NS, name, "-o", "json")[1])["status"]


# -- the templates (facts: docs/reference/operator.md §2) ------------------------------------------------
def device_plugin(rig, config=False):
    """assets/state-device-plugin/0500_daemonset.yaml, TransformDevicePlugin, transformDevicePluginCtrForCDI,
    applyMIGConfiguration; config: handleDevicePluginConfig with devicePlugin.config.name set."""
    e = {"PASS_DEVICE_SPECS": "true", "FAIL_ON_INIT_ERROR": "true", "DEVICE_LIST_STRATEGY": "cdi-annotations,cdi-cri",
         "DEVICE_ID_STRATEGY": "uuid", "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "all",
         "MPS_ROOT": MPS, "MIG_STRATEGY": "mixed", "NVIDIA_MIG_MONITOR_DEVICES": "all", "CDI_ENABLED": "true",
         "CDI_ANNOTATION_PREFIX": "cdi.k8s.io/",
         "NVIDIA_CDI_HOOK_PATH": os.path.join(rig.toolkit, "toolkit", "nvidia-cdi-hook")}
    mounts = [{"name": "nvidia-device-plugin-entrypoint", "readOnly": True, "mountPath": "/bin/entrypoint.sh",
               "subPath": "entrypoint.sh"},
              {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
              {"name": "run-nvidia-validations", "mountPath": "/run/nvidia/validations"},
              {"name": "driver-install-dir", "mountPath": "/driver-root", "mountPropagation": "HostToContainer"},
              {"name": "host-root", "mountPath": "/host", "readOnly": True, "mountPropagation": "HostToContainer"},
              {"name": "cdi-root", "mountPath": "/var/run/cdi"},
              {"name": "mps-shm", "mountPath": "/dev/shm"}, {"name": "mps-root", "mountPath": "/mps"}]
    volumes = [{"name": "nvidia-device-plugin-entrypoint",
                "configMap": {"name": "nvidia-device-plugin-entrypoint", "defaultMode": 448}},
               host("device-plugin", "/var/lib/kubelet/device-plugins"),
               host("run-nvidia-validations", "/run/nvidia/validations", "DirectoryOrCreate"),
               host("driver-install-dir", DRIVER, "DirectoryOrCreate"), host("host-root", "/"),
               host("cdi-root", "/var/run/cdi", "DirectoryOrCreate"), host("mps-root", MPS, "DirectoryOrCreate"),
               host("mps-shm", MPS + "/shm")]
    spec_ = {"nodeSelector": {"nvidia.com/gpu.deploy.device-plugin": "true"}, "serviceAccountName": "nvidia-device-plugin",
             "containers": [{"name": "nvidia-device-plugin", "command": ["/bin/sh", "-c"], "args": ["/bin/entrypoint.sh"],
                             "securityContext": {"privileged": True}, "env": env(e), "volumeMounts": mounts}],
             "volumes": volumes}
    if config:
        shared = [{"name": "config", "mountPath": "/config"}, {"name": "plugin-configs", "mountPath": "/available-configs"}]
        cm_env = env({"ONESHOT": "true", "KUBECONFIG": "", "NODE_LABEL": "nvidia.com/device-plugin.config",
                      "CONFIG_FILE_SRCDIR": "/available-configs", "CONFIG_FILE_DST": "/config/config.yaml",
                      "DEFAULT_CONFIG": "default", "SEND_SIGNAL": "false", "SIGNAL": "", "PROCESS_TO_SIGNAL": "",
                      "FALLBACK_STRATEGIES": "empty"}) + [field("NODE_NAME", "spec.nodeName")]
        spec_["initContainers"] = [{"name": "config-manager-init", "command": ["config-manager"], "env": cm_env,
                                    "volumeMounts": shared}]
        side_env = [dict(e) for e in cm_env]
        for e in side_env:
            e["value"] = {"ONESHOT": "false", "SEND_SIGNAL": "true", "SIGNAL": "1",
                          "PROCESS_TO_SIGNAL": "nvidia-device-plugin"}.get(e["name"], e.get("value"))
            if e["value"] is None:
                del e["value"]
        spec_["containers"].append({"name": "config-manager", "command": ["config-manager"], "env": side_env,
                                    "securityContext": {"privileged": True}, "volumeMounts": shared})
        spec_["containers"][0]["env"].append({"name": "CONFIG_FILE", "value": "/config/config.yaml"})
        spec_["containers"][0]["volumeMounts"] += shared
        spec_["volumes"] += [{"name": "plugin-configs", "configMap": {"name": "plugin-configs"}},
                             {"name": "config", "emptyDir": {}}]
        spec_["shareProcessNamespace"] = True
    return spec_


def gfd(rig):
    """assets/gpu-feature-discovery/0500_daemonset.yaml, TransformGPUDiscoveryPlugin (config unset)."""
    e = env({"GFD_SLEEP_INTERVAL": "60s", "GFD_FAIL_ON_INIT_ERROR": "true", "MIG_STRATEGY": "mixed",
             "NVIDIA_MIG_MONITOR_DEVICES": "all"})
    e += [field("NAMESPACE", "metadata.namespace"), field("NODE_NAME", "spec.nodeName"), field("POD_NAME", "metadata.name")]
    # test: this cluster mounts no service-account tokens (node.py), so the pod cannot reach the API as the
    # Operator's GFD does; the feature file it writes as on OpenShift (USE_NODE_FEATURE_API=false, the
    # Operator's own setting there). The NodeFeature object with the chart's role: test_k8s_nodefeature.
    e += env({"USE_NODE_FEATURE_API": "false"})
    return {"nodeSelector": {"nvidia.com/gpu.deploy.gpu-feature-discovery": "true"},
            "serviceAccountName": "nvidia-gpu-feature-discovery",
            "containers": [{"name": "gpu-feature-discovery", "command": ["gpu-feature-discovery"], "env": e,
                            "securityContext": {"privileged": True},
                            "volumeMounts": [{"name": "output-dir",
                                              "mountPath": "/etc/kubernetes/node-feature-discovery/features.d"},
                                             {"name": "host-sys", "mountPath": "/sys", "readOnly": True}]}],
            # test: the output dir is a test dir, not the host's /etc/kubernetes/node-feature-discovery/features.d
            "volumes": [host("output-dir", rig.features), host("host-sys", "/sys")]}


def dcgm_exporter(rig):
    """assets/state-dcgm-exporter/0800_daemonset.yaml, TransformDCGMExporter (no DCGM pod, no options)."""
    e = env({"DCGM_EXPORTER_LISTEN": ":9400", "DCGM_EXPORTER_KUBERNETES": "true",
             "DCGM_EXPORTER_COLLECTORS": "/etc/dcgm-exporter/dcp-metrics-included.csv"})
    probe = {"httpGet": {"port": 9400, "path": "/health"}, "initialDelaySeconds": 45, "periodSeconds": 5}
    return {"nodeSelector": {"nvidia.com/gpu.deploy.dcgm-exporter": "true"}, "serviceAccountName": "nvidia-dcgm-exporter",
            "automountServiceAccountToken": False,
            "containers": [{"name": "nvidia-dcgm-exporter", "env": e + [field("NODE_NAME", "spec.nodeName")],
                            "ports": [{"name": "metrics", "containerPort": 9400}], "livenessProbe": probe,
                            "readinessProbe": {"httpGet": probe["httpGet"], "initialDelaySeconds": 45},
                            "securityContext": {"privileged": True},
                            "volumeMounts": [{"name": "pod-gpu-resources", "readOnly": True,
                                              "mountPath": "/var/lib/kubelet/pod-resources"}]}],
            "volumes": [host("pod-gpu-resources", "/var/lib/kubelet/pod-resources")]}


def mps_control_daemon(rig):
    """assets/state-mps-control-daemon/0400_daemonset.yaml, TransformMPSControlDaemon (config unset)."""
    return {"nodeSelector": {"nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/mps.capable": "true"},
            "serviceAccountName": "nvidia-device-plugin", "hostPID": True,
            "initContainers": [{"name": "mps-control-daemon-mounts", "command": ["mps-control-daemon", "mount-shm"],
                                "securityContext": {"privileged": True},
                                "volumeMounts": [{"name": "mps-root", "mountPath": "/mps",
                                                  "mountPropagation": "Bidirectional"}]}],
            "containers": [{"name": "mps-control-daemon-ctr", "command": ["mps-control-daemon"],
                            "env": env({"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
                                        "MIG_STRATEGY": "mixed", "NVIDIA_MIG_MONITOR_DEVICES": "all"}) +
                            [field("NODE_NAME", "spec.nodeName")],
                            "securityContext": {"privileged": True},
                            "volumeMounts": [{"name": "mps-shm", "mountPath": "/dev/shm"},
                                             {"name": "mps-root", "mountPath": "/mps"}]}],
            "volumes": [host("mps-root", MPS, "DirectoryOrCreate"), host("mps-shm", MPS + "/shm")]}


# devicePlugin.config's configs for this test: the default time-slices each GPU in two (a node capacity that
# tells which config the plugin runs with), "plain" does not
TIME_SLICED = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n"
LABEL = "nvidia.com/device-plugin.config"
KUBECONFIG = "/gpulet-test/kubeconfig"


def with_kubeconfig(spec_, kc):
    """test: config-manager reads its Node from the API server. The Operator's KUBECONFIG="" means in-cluster,
    with the pod's service-account token; this cluster mounts none (node.py disables the ServiceAccount
    admission plugin), so both config-manager containers get a kubeconfig of a token of the same account
    instead. The rest of the Operator's env is kept."""
    for c in spec_["initContainers"] + [c for c in spec_["containers"] if c["name"] == "config-manager"]:
        for e in c["env"]:
            if e["name"] == "KUBECONFIG":
                e["value"] = KUBECONFIG
        c["volumeMounts"] = c["volumeMounts"] + [{"name": "gpulet-test-kubeconfig", "mountPath": KUBECONFIG,
                                                  "readOnly": True}]
    spec_["volumes"].append(host("gpulet-test-kubeconfig", kc, "File"))
    return spec_


def chosen(rig, node, pod, config, count):
    """config-manager-init exited 0 having linked /config/config.yaml to <config>; the plugin then runs with it
    (the node's nvidia.com/gpu capacity is <count>)."""
    def done():
        st = rig.status(pod)
        ic = (st.get("initContainerStatuses") or [{}])[0]
        return ic.get("state", {}).get("terminated") or ic.get("lastState", {}).get("terminated")
    term = node.wait("config-manager-init of %s to finish" % pod, done, timeout=90)
    msg = rig.logs(pod, "config-manager-init")
    check(term.get("exitCode") == 0, "config-manager-init exited %s: %s" % (term.get("exitCode"), msg))
    check("Successfully updated to config" in msg and "config=/available-configs/%s" % config in msg,
          "config-manager-init linked another config than %s: %s" % (config, msg))
    try:
        node.wait("%s's plugin to register" % pod, lambda: logged(rig, pod, "nvidia-device-plugin",
                                                                  "Registered device plugin"), timeout=90)
        node.wait_node_ready_for_gpus(count=count, timeout=90)
    except NodeError as e:
        raise NodeError("%s\nplugin log:\n%s" % (e, rig.logs(pod, "nvidia-device-plugin")[-3000:]))


def logged(rig, pod, container, words):
    """The container's log once it has these words."""
    log = rig.logs(pod, container)
    return log if words in log else None


# -- the test ----------------------------------------------------------------------------------------------
class OperatorNode(Node):
    apiserver_flags = ("--allow-privileged=true",)  # every operand the Operator runs is privileged
    authorization_mode = "Node,RBAC"  # config-manager's account has the Operator's rules, no more



def scrape(node):
    p = subprocess.run(node.ns(["/bin/busybox", "wget", "-q", "-O", "-", "http://127.0.0.1:9400/metrics"]),
                       capture_output=True, text=True, timeout=20)
    return p.stdout if p.returncode == 0 else ""


def test_operator():
    t0 = time.time()
    with OperatorNode() as node:
        tar = image_tarball(node.t)
        node.start(plugin=False, images=[tar])
        rig = Rig(node)
        rig.prepare()

        # device plugin: waits for the validator, then registers from the pod
        rig.pod("nvidia-device-plugin", device_plugin(rig))
        node.wait("the plugin container to wait for driver-ready",
                  lambda: "waiting for the driver validations" in rig.logs("nvidia-device-plugin"), timeout=90)
        check(node.gpu_capacity()[0] in (None, "0"), "GPUs advertised before driver-ready: %s" % (node.gpu_capacity(),))
        rig.validator_ready()
        try:
            node.wait_node_ready_for_gpus(count="6")
        except NodeError as e:
            raise NodeError("%s\nplugin pod log:\n%s" % (e, rig.logs("nvidia-device-plugin")[-3000:]))
        log = rig.logs("nvidia-device-plugin")
        check("IS_HOST_DRIVER=false" in log and "Registered device plugin" in log, "plugin log: %s" % log[-2000:])
        sp = spec(node)
        hooks = {h["path"] for e in [sp.get("containerEdits", {})] + [d["containerEdits"] for d in sp["devices"]]
                 for h in e.get("hooks", [])}
        check(hooks == {os.path.join(rig.toolkit, "toolkit", "nvidia-cdi-hook")}, "spec hooks %s" % hooks)
        pod_log = node.start_pod("gpu-pod", probe_script(sp), {"nvidia.com/gpu": "1"}, timeout=90)
        (gpu,) = gpu_nodes(parse(pod_log)[0])
        uuid = {g["minor"]: g["uuid"] for g in node.fixture_data()["gpus"]}[int(gpu[len("/dev/nvidia"):])]
        print("PASS device plugin: waited for driver-ready, 6 nvidia.com/gpu advertised from the pod, a GPU pod "
              "got %s (%s) through its CDI spec (hook %s)" % (gpu, uuid, sorted(hooks)[0]))

        # GPU Feature Discovery
        rig.pod("gpu-feature-discovery", gfd(rig))
        path = os.path.join(rig.features, "gfd")
        node.wait("GFD's labels", lambda: os.path.exists(path) and "nvidia.com/gpu.count=8" in open(path).read(),
                  timeout=90)
        labels = dict(ln.split("=", 1) for ln in open(path).read().splitlines() if "=" in ln)
        check(labels.get("nvidia.com/mig.strategy") == "mixed" and "nvidia.com/gpu.product" in labels,
              "labels %s" % labels)
        print("PASS gpu-feature-discovery: %d labels in features.d (gpu.count 8, mig.strategy mixed)" % len(labels))

        # dcgm-exporter: no command
        rig.pod("nvidia-dcgm-exporter", dcgm_exporter(rig))
        uuids = {g["uuid"] for g in node.fixture_data()["gpus"]}

        def served():
            body = scrape(node)
            return body if all('UUID="%s"' % u in body for u in uuids) and 'pod="gpu-pod"' in body else None
        try:
            body = node.wait("the exporter's metrics with every GPU and the GPU pod", served, timeout=90)
        except NodeError as e:
            raise NodeError("%s\nexporter log:\n%s\nlast scrape:\n%s" % (e, rig.logs("nvidia-dcgm-exporter")[-2000:],
                                                                           scrape(node)[:1500]))
        mine = [ln for ln in body.splitlines() if ln.startswith("DCGM_FI_DEV_GPU_UTIL{") and 'pod="gpu-pod"' in ln]
        check(len(mine) == 1 and 'UUID="%s"' % uuid in mine[0], "the GPU pod's series: %s" % mine)
        node.wait("the entrypoint to say it runs dcgm-exporter",
                  lambda: "running dcgm-exporter" in rig.logs("nvidia-dcgm-exporter"), timeout=30)
        print("PASS dcgm-exporter (no command): every GPU served on :9400, gpu-pod's GPU %s attributed" % uuid)

        # MPS control daemon (no MPS config: it waits)
        rig.pod("nvidia-device-plugin-mps-control-daemon", mps_control_daemon(rig))
        node.wait("the MPS daemon to wait for a config", lambda: "No devices are configured for MPS sharing" in
                  rig.logs("nvidia-device-plugin-mps-control-daemon", "mps-control-daemon-ctr"), timeout=90)
        p = subprocess.run(node.ns(["cat", "/proc/self/mountinfo"]), capture_output=True, text=True)
        shm = [ln for ln in p.stdout.splitlines() if ln.split()[4] == MPS + "/shm"]
        check(shm and " - tmpfs " in shm[-1], "no tmpfs at %s/shm on the node: %s" % (MPS, shm))
        st = rig.status("nvidia-device-plugin-mps-control-daemon")
        check(st["initContainerStatuses"][0]["state"].get("terminated", {}).get("exitCode") == 0, "mount-shm: %s" % st)
        print("PASS MPS control daemon: mount-shm put a tmpfs at %s/shm on the node (Bidirectional), the daemon waits "
              "for an MPS config" % MPS)

        # devicePlugin.config set: gpulet's config-manager (docs/reference/config-manager.md) links the config
        # the node's label names, or DEFAULT_CONFIG, and the plugin starts with it. The first plugin pod goes:
        # two plugins would register the same resource.
        node.kubectl("delete", "pod", "-n", NS, "nvidia-device-plugin", "--wait=true", timeout=90)
        node.kubectl("create", "configmap", "-n", NS, "plugin-configs", "--from-literal=default=" + TIME_SLICED,
                     "--from-literal=plain=version: v1")
        kc = rig.grant_device_plugin()
        rig.pod("plugin-with-config", with_kubeconfig(device_plugin(rig, config=True), kc))
        chosen(rig, node, "plugin-with-config", "default", "12")
        print("PASS devicePlugin.config set, no label: config-manager-init exits 0 linking DEFAULT_CONFIG's config, "
              "the plugin serves it (6 GPUs time-sliced x2: 12 nvidia.com/gpu)")

        # the label names another config: the sidecar links it and SIGHUPs the plugin (shareProcessNamespace),
        # which reloads with it
        node.kubectl("label", "node", NODE_NAME, LABEL + "=plain")
        try:
            side = node.wait("the sidecar to signal the plugin", lambda: logged(
                rig, "plugin-with-config", "config-manager", "Successfully sent signal"), timeout=60)
        except NodeError as e:
            raise NodeError("%s\nsidecar log:\n%s" % (e, rig.logs("plugin-with-config", "config-manager")[-3000:]))
        check("config=/available-configs/plain" in side, "the sidecar linked another config than plain: %s" % side)
        try:
            node.wait_node_ready_for_gpus(count="6", timeout=90)
        except NodeError as e:
            raise NodeError("%s\nplugin log:\n%s" % (e, rig.logs("plugin-with-config", "nvidia-device-plugin")[-3000:]))
        print("PASS %s=plain: the config-manager sidecar linked plain and signalled the plugin, which reloaded: "
              "6 nvidia.com/gpu" % LABEL)

        # a new pod: its init container links what the label names
        node.kubectl("delete", "pod", "-n", NS, "plugin-with-config", "--wait=true", timeout=90)
        rig.pod("plugin-with-config-2", with_kubeconfig(device_plugin(rig, config=True), kc))
        chosen(rig, node, "plugin-with-config-2", "plain", "6")
        print("PASS a new pod: config-manager-init links plain as the label names, the plugin serves 6 nvidia.com/gpu")
    print("PASS test_operator (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_operator()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
