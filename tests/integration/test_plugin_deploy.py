#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""deploy/ is consistent and accepted by independent parsers: real helm renders the chart
(deploy/helm/gpulet with ci/time-slicing-values.yaml, the former static example), PyYAML for the manifests, Python's
tomllib and `containerd config dump` (containerd's own parser) for the containerd snippet, and
gpulet itself for the env vars and the ConfigMap's config file. Checks the DaemonSet's contract
(docs/reference/device-plugin.md §10): kube-system, system-node-critical, nvidia.com/gpu toleration,
device-plugins and /var/run/cdi hostPaths, least privilege (no whole-host mount, no SA token,
RuntimeDefault seccomp); RuntimeClass handler == containerd
runtime name; CONFIG_FILE == the ConfigMap's mount."""
import json
import os
import subprocess
import tempfile
import tomllib

import yaml

from helm_lib import CHART, find, template
from plugin_lib import FAKE_NVML_LIB, FIXTURES, GPULET, MKROOT, SRC, check

DEPLOY = os.path.join(SRC, "deploy")


def render():
    """The chart with the example values (ConfigMap with time-slicing, GFD on), as helm renders it."""
    with open(os.path.join(CHART, "ci", "time-slicing-values.yaml")) as f:
        values = yaml.safe_load(f)
    # the RuntimeClass is opt-in (a cluster without the GPU Operator's): checked against containerd here
    values.setdefault("runtimeClass", {})["create"] = True
    return template(values=values)


def check_pruned_root(host_paths):
    """A fake node root cut down to the DaemonSet's host mounts gives the same CDI spec as the whole
    root: the mounts hold everything gpulet reads (driver libraries, firmware, binaries, sockets,
    device nodes, MIG capability minors)."""
    with tempfile.TemporaryDirectory() as tmp:
        full, pruned = os.path.join(tmp, "full"), os.path.join(tmp, "pruned")
        fixture = os.path.join(FIXTURES, "dgx-a100.json")
        r = subprocess.run([MKROOT, full, fixture], capture_output=True, text=True)
        check(r.returncode == 0, "mkroot: %s" % r.stderr)
        os.makedirs(pruned)
        for hp in host_paths:
            src, dst = full + hp, pruned + hp
            if os.path.lexists(src):  # cp -a: device nodes, links and modes as they are
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                r = subprocess.run(["cp", "-a", src, dst], capture_output=True, text=True)
                check(r.returncode == 0, "cp -a %s: %s" % (src, r.stderr))
        env = dict(os.environ, FAKE_NVML_FIXTURE=fixture)
        specs = []
        for root in (full, pruned):
            p = subprocess.run([GPULET, "cdi", "generate", "--root", root, "--nvml-library", FAKE_NVML_LIB,
                                "--format", "json"], capture_output=True, text=True, env=env)
            check(p.returncode == 0, "cdi generate --root %s: %s" % (root, p.stderr))
            specs.append(json.loads(p.stdout))
        check(specs[0] == specs[1] and specs[0]["containerEdits"].get("mounts"),
              "the DaemonSet's host mounts miss something gpulet reads:\nwhole root %s\nmounts only %s"
              % (json.dumps(specs[0])[:1500], json.dumps(specs[1])[:1500]))


def main():
    docs = render()
    ds = find(docs, "DaemonSet", "device-plugin")
    rc = find(docs, "RuntimeClass")
    cm = find(docs, "ConfigMap")
    with open(os.path.join(DEPLOY, "containerd-snippet.toml"), "rb") as f:
        toml = tomllib.load(f)

    check(ds["kind"] == "DaemonSet" and ds["metadata"]["namespace"] == "kube-system", "DaemonSet in kube-system")
    pod = ds["spec"]["template"]["spec"]
    check(pod["priorityClassName"] == "system-node-critical", "priority class")
    check({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"], "toleration")
    (c,) = pod["containers"]
    sc = c["securityContext"]
    check(sc.get("privileged") in (None, False) and sc["allowPrivilegeEscalation"] is False
          and sc["capabilities"]["drop"] == ["ALL"] and not sc["capabilities"].get("add"), "least privilege: %r" % sc)
    vols = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    env = {e["name"]: e["value"] for e in c["env"] if "value" in e}  # NODE_NAME: from the pod (valueFrom)
    args = c["args"]
    root = [a.split("=", 1)[1] for a in args if a.startswith("--root=")][0]

    dp = mounts["/var/lib/kubelet/device-plugins"]
    check(vols[dp["name"]]["hostPath"]["path"] == "/var/lib/kubelet/device-plugins" and not dp.get("readOnly"),
          "device-plugins hostPath, writable")
    cdi = mounts[root + "/var/run/cdi"]
    check(vols[cdi["name"]]["hostPath"]["path"] == "/var/run/cdi" and not cdi.get("readOnly"),
          "/var/run/cdi writable at <root>/var/run/cdi, where the plugin writes its spec")
    # least host exposure (reliability review): only what gpulet reads, read-only, never the whole host
    # or a dir holding secrets; the token of its own account only, for node health (on by default; its
    # least rules: test_helm.py); the runtime's default seccomp profile
    check(pod.get("automountServiceAccountToken") is True and pod.get("serviceAccountName", "").endswith("-device-plugin"),
          "the plugin's token is its own account's (node health): %r" % pod.get("serviceAccountName"))
    check(pod.get("securityContext", {}).get("seccompProfile") == {"type": "RuntimeDefault"},
          "pod seccompProfile RuntimeDefault: %r" % pod.get("securityContext"))
    # MPS: the daemons' sockets (asked before replicas are advertised) and their tmpfs, as /dev/shm
    writable = {"/var/lib/kubelet/device-plugins", "/var/run/cdi", "/run/nvidia/mps", "/run/nvidia/mps/shm"}
    at = {"/run/nvidia/mps/shm": "/dev/shm"}
    secret = ("/", "/etc", "/var", "/var/lib", "/var/lib/kubelet", "/run", "/var/run", "/root", "/home")
    for m in c["volumeMounts"]:
        hp = vols[m["name"]].get("hostPath")
        if not hp:
            continue
        check(hp["path"] not in secret, "hostPath %s exposes more than gpulet reads" % hp["path"])
        check(hp["path"] in writable or m.get("readOnly") is True, "hostPath %s must be readOnly" % hp["path"])
        want = at.get(hp["path"], root + hp["path"])
        if hp["path"] not in writable or hp["path"].startswith("/run/nvidia/mps"):
            check(m["mountPath"] == want, "%s mounted at %s, not %s" % (hp["path"], m["mountPath"], want))
    # what the plugin reads (src/host/driver.c, node.c, cdi.c) is reachable below --root
    host = {vols[m["name"]]["hostPath"]["path"] for m in c["volumeMounts"] if vols[m["name"]].get("hostPath")}
    for need in ("/etc/ld.so.cache", "/usr/lib", "/lib/firmware/nvidia", "/lib64", "/usr/bin",
                 "/proc/driver/nvidia/version", "/proc/driver/nvidia-caps/mig-minors", "/sys/bus/pci/devices",
                 "/sys/devices", "/dev/nvidiactl", "/run/nvidia-persistenced/socket"):
        check(any(need == h or need.startswith(h + "/") for h in host), "%s is read but not mounted" % need)
    check_pruned_root(sorted(host - writable))
    cfgmount = [m for m in c["volumeMounts"] if vols[m["name"]].get("configMap")][0]
    check(vols[cfgmount["name"]]["configMap"]["name"] == cm["metadata"]["name"], "ConfigMap name")
    check(env["CONFIG_FILE"] == cfgmount["mountPath"] + "/" + next(iter(cm["data"])), "CONFIG_FILE %r" % env["CONFIG_FILE"])

    # every env var and arg is one gpulet accepts, with the meaning the manifest intends
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "config.yaml")
        with open(cfg, "w") as f:
            f.write(cm["data"]["config.yaml"])
        e = dict(os.environ, **env)
        e["CONFIG_FILE"] = cfg
        e["NODE_NAME"] = "gpu-node-1"  # the pod's spec.nodeName (valueFrom) in the manifest
        p = subprocess.run([GPULET, "plugin", "--print-config", *args], capture_output=True, text=True, env=e)
        check(p.returncode == 0 and p.stderr == "", "gpulet rejects the manifest's settings: %s" % p.stderr)
        eff = json.loads(p.stdout)
        check(eff["root"] == root and eff["device-list-strategy"] == [env["DEVICE_LIST_STRATEGY"]]
              and eff["mig-strategy"] == env["MIG_STRATEGY"], "effective config %r" % eff)
        check(eff["sharing"]["strategy"] == "time-slicing" and eff["sharing"]["resources"][0]["replicas"] == 4,
              "ConfigMap sharing not applied: %r" % eff["sharing"])

    # scheduling (QA B3): a RuntimeClass nodeSelector is added to every pod naming the class, the plugin
    # included, so it must not need an Operator-only label; the DaemonSet matches stock NFD's PCI labels
    check(not rc.get("scheduling", {}).get("nodeSelector"), "RuntimeClass nodeSelector %r" % rc.get("scheduling"))
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    keys = {e["key"] for t in terms for e in t["matchExpressions"]}
    check({"feature.node.kubernetes.io/pci-0302_10de.present", "feature.node.kubernetes.io/pci-0300_10de.present",
           "nvidia.com/gpu.present"} <= keys, "GPU-node affinity keys %s" % sorted(keys))

    # RuntimeClass handler == the containerd runtime name; containerd's own parser takes the snippet
    check(pod["runtimeClassName"] == rc["metadata"]["name"], "DaemonSet runtimeClassName")
    check(rc["metadata"].get("annotations", {}).get("helm.sh/resource-policy") == "keep",
          "RuntimeClass without helm.sh/resource-policy: keep (helm uninstall would delete it): %r" % rc["metadata"])
    cri = toml["plugins"]["io.containerd.grpc.v1.cri"]
    check(rc["handler"] in cri["containerd"]["runtimes"], "handler %r not a containerd runtime" % rc["handler"])
    check(cri["enable_cdi"] is True and "/var/run/cdi" in cri["cdi_spec_dirs"], "CDI enabled with /var/run/cdi")
    p = subprocess.run(["containerd", "-c", os.path.join(DEPLOY, "containerd-snippet.toml"), "config", "dump"],
                       capture_output=True, text=True)
    check(p.returncode == 0, "containerd config dump: %s" % p.stderr)
    check('runtimes.%s]' % rc["handler"] in p.stdout and "nvidia-container-runtime" in p.stdout,
          "containerd did not keep the nvidia runtime")
    print("PASS deploy manifests")


if __name__ == "__main__":
    main()
