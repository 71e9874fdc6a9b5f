#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What the DRA tests on the real node share (tests/k8s/node.py with control_plane=True, no device
plugin): NVIDIA's DeviceClasses, claims, templates and pods as objects, `gpulet dra` started beside
kubelet with the node's admin kubeconfig, the pool read back from the API server, and what a pod
sees of its claim checked against the claim's CDI spec and the fake node root (podcheck.py's probe)."""
import json
import os
import re
import time

import yaml

from node import BUILD, BUSYBOX_IMAGE, FAKE_NVML_LIB, GPULET, NODE_NAME, Node, NodeError  # noqa: F401
from podcheck import check, gpu_nodes, host_rdev, parse, probe_script

DRIVER = "gpu.nvidia.com"
KIND = "k8s.gpu.nvidia.com/claim"
# NVIDIA's chart, deployments/helm/.../templates/deviceclass-{gpu,mig}.yaml at v25.12.0 (docs/reference/dra.md §10)
DEVICE_CLASSES = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                   "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                                                 "device.attributes['gpu.nvidia.com'].type == '%s'" % t}}]}}
                  for name, t in (("gpu.nvidia.com", "gpu"), ("mig.nvidia.com", "mig"))]


def request(name, cls="gpu.nvidia.com", cel=None, count=None):
    r = {"name": name, "exactly": {"deviceClassName": cls}}
    if cel:
        r["exactly"]["selectors"] = [{"cel": {"expression": cel}}]
    if count:
        r["exactly"]["count"] = count
    return r


def gpu_config(sharing=None, kind="GpuConfig", requests=None):
    """An opaque config of the claim for NVIDIA's driver (docs/reference/dra.md §6)."""
    params = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": kind}
    if sharing:
        params["sharing"] = sharing
    c = {"opaque": {"driver": DRIVER, "parameters": params}}
    if requests:
        c["requests"] = requests
    return c


def claim_spec(requests, constraints=None, config=None):
    spec = {"devices": {"requests": requests}}
    if constraints:
        spec["devices"]["constraints"] = constraints
    if config:
        spec["devices"]["config"] = config
    return spec


def claim(name, requests, constraints=None, config=None):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"}, "spec": claim_spec(requests, constraints, config)}


def template(name, requests, constraints=None, config=None):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": claim_spec(requests, constraints, config)}}


def pod(name, script, claim_name=None, template_name=None, restart="Never", ref_name="gpus"):
    """A busybox pod with one claim (by name or from a template) referenced as ref_name, scheduled by
    kube-scheduler (no nodeName: the scheduler allocates the claim). script runs, then the container
    sleeps."""
    ref = {"name": ref_name}
    if claim_name:
        ref["resourceClaimName"] = claim_name
    else:
        ref["resourceClaimTemplateName"] = template_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"hostNetwork": True, "automountServiceAccountToken": False, "enableServiceLinks": False,
                     "restartPolicy": restart, "terminationGracePeriodSeconds": 1,
                     "tolerations": [{"operator": "Exists"}], "resourceClaims": [ref],
                     "containers": [{"name": "c", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                                     "command": ["/bin/sh", "-c", script + "\necho PROBE-DONE\nexec sleep 3600"],
                                     "resources": {"claims": [{"name": ref_name}]}}]}}


def apply(node, *objs):
    for o in objs:
        node.kubectl("apply", "-f", "-", stdin=json.dumps(o))


def dra_args(node, *more):
    return [GPULET, "dra", "--nvml-library", FAKE_NVML_LIB, "--root", node.root, "--driver-root", node.root,
            "--nvidia-cdi-hook-path", node.hook, "--node-name", NODE_NAME, "--kubeconfig", node.admin_kubeconfig,
            "--kernel-log", "", *more]


def start_dra(node, *more, name="dra", wait_published=True, env=None):
    """gpulet dra beside the node's kubelet; returns once kubelet registered it (and it published)."""
    mark = log_count(node, name, "Registered DRA plugin with kubelet")
    node.spawn(name, dra_args(node, *more), env=dict(node.plugin_env(), **(env or {})))
    node.wait("kubelet registers gpulet dra", lambda: log_count(node, name, "Registered DRA plugin with kubelet") > mark,
              timeout=60, proc=name)
    if wait_published:
        node.wait("gpulet dra publishes its ResourceSlices", lambda: pool(node), timeout=30, proc=name)


def stop_dra(node, name="dra"):
    node.stop_proc(name)


def log_count(node, name, text):
    return node.log_tail(name, 10 ** 8).count(text)


def slices(node):
    return [s for s in node.get("resourceslices")["items"] if s["spec"]["driver"] == DRIVER]


def pool(node):
    """{device name: device} of the newest generation of this node's pool; {} when there is none."""
    items = [s for s in slices(node) if s["spec"]["pool"]["name"] == NODE_NAME]
    if not items:
        return {}
    gen = max(s["spec"]["pool"]["generation"] for s in items)
    return {d["name"]: d for s in items if s["spec"]["pool"]["generation"] == gen for d in s["spec"].get("devices", [])}


def generation(node):
    return max((s["spec"]["pool"]["generation"] for s in slices(node)), default=0)


def setup_classes(node):
    apply(node, *DEVICE_CLASSES)


def claim_of(node, pod_name):
    """The ResourceClaim object of a pod's one claim (a template's made claim too)."""
    st = node.get("pod", pod_name)["status"].get("resourceClaimStatuses") or []
    spec = node.get("pod", pod_name)["spec"]["resourceClaims"][0]
    name = spec.get("resourceClaimName") or (st[0].get("resourceClaimName") if st else None)
    return node.get("resourceclaim", name)


def allocated_devices(c):
    return [r["device"] for r in c["status"]["allocation"]["devices"]["results"]]


def spec_path(node, uid):
    return os.path.join(node.cdi_dir, "k8s.gpu.nvidia.com-claim_%s.yaml" % uid)


def read_spec(node, uid):
    with open(spec_path(node, uid)) as f:
        return yaml.safe_load(f)


def wait_running(node, name, timeout=90):
    """The pod runs and its probe printed; its log. A pod that cannot start says why (its events)."""
    def ready():
        p = node.get("pod", name)
        if p["status"].get("phase") == "Running":
            rc, log = node.kubectl("logs", name, check=False)
            if rc == 0 and "PROBE-DONE" in log:
                return log
        return None
    try:
        return node.wait("pod %s running with its probe's output" % name, ready, timeout=timeout, proc="dra")
    except NodeError as e:
        raise NodeError("%s\nevents: %s\ngpulet dra log tail:\n%s" % (e, node.events_of(name), node.log_tail("dra")))


def probe(spec):
    return probe_script({"containerEdits": spec.get("containerEdits", {})})


def check_sees(node, pod_name, spec, want_devices, want_caps=0, log=None):
    """The pod sees exactly the device nodes of its claim's spec (the host's majors and minors), the
    control nodes, every file the spec mounts and libcuda in its ld.so.cache."""
    log = log or wait_running(node, pod_name)
    devs, env, have, miss, ld = parse(log)
    nodes = {n["path"] for d in spec["devices"] for n in d["containerEdits"].get("deviceNodes", [])}
    gpus = gpu_nodes(devs)
    check(gpus == gpu_nodes({p: 0 for p in nodes}) and len(gpus) == want_devices,
          "pod %s: GPU nodes %s, the claim's spec %s (want %d)" % (pod_name, sorted(gpus), sorted(nodes), want_devices))
    for p, mm in devs.items():
        check(host_rdev(node, p) == mm, "pod %s: %s is %s inside, %s on the host" % (pod_name, p, mm, host_rdev(node, p)))
    for ctl in ("/dev/nvidiactl", "/dev/nvidia-uvm"):
        check(ctl in devs, "pod %s: control node %s missing (%s)" % (pod_name, ctl, sorted(devs)))
    check(not miss, "pod %s: the spec's mounted files missing inside: %s" % (pod_name, sorted(miss)))
    check(len(have) >= 10, "pod %s: only %d mounted files seen" % (pod_name, len(have)))
    check(ld not in (None, "none", "0"), "pod %s: ld.so.cache does not map libcuda.so.1 (%s)" % (pod_name, ld))
    caps = {p for p in devs if p.startswith("/dev/nvidia-caps/")}
    check(len(caps) == want_caps and caps <= nodes, "pod %s: caps %s, want %d of the spec's %s"
          % (pod_name, sorted(caps), want_caps, sorted(nodes)))
    return devs, env


def delete_pod(node, name, wait=True):
    node.kubectl("delete", "pod", name, "--grace-period=0", "--force", "--wait=false", check=False)
    if wait:
        node.wait("pod %s gone" % name, lambda: node.kubectl("get", "pod", name, check=False)[0] != 0, timeout=60)


def events(node, name, reason):
    return [m for r, _, m in node.events_of(name) if r == reason]


def minor_of(device):
    m = re.match(r"gpu-(\d+)", device)
    return int(m.group(1)) if m else None


def timed(what, t):
    print("PASS %s (%.1fs)" % (what, time.time() - t))


# a stand-in for nvidia-smi in the fake root: it records its arguments (TimeSlicing and MPS set the
# GPUs' compute mode and time slice with it, docs/reference/dra.md §6.3)
SMI = "#!/bin/sh\necho \"$@\" >> '%s'\nif [ -e '%s' ]; then echo 'Unable to set the time slice: no GPU'; exit 3; fi\n"


def smi_standin(node):
    """Install the recording nvidia-smi (it fails while smi_fail(node) exists); returns the file its
    calls go to."""
    calls = os.path.join(node.t, "smi.calls")
    path = os.path.join(node.root, "usr/bin/nvidia-smi")
    with open(path + ".new", "w") as f:
        f.write(SMI % (calls, smi_fail(node)))
    os.chmod(path + ".new", 0o755)
    os.rename(path + ".new", path)
    open(calls, "a").close()
    return calls


def smi_fail(node):
    return os.path.join(node.t, "smi.fail")


def smi_calls(calls):
    with open(calls) as f:
        return f.read().splitlines()


def set_boot_id(node, boot):
    d = os.path.join(node.root, "proc/sys/kernel/random")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "boot_id"), "w") as f:
        f.write(boot + "\n")
