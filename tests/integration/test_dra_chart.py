#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The chart's DRA part (deploy/helm/gpulet, dra.*), rendered by the real helm v4
(docs/reference/dra.md §9, §10, §13; the same objects run against a real API server in
tests/k8s/test_k8s_dra_chart.py):

  * off by default: nothing of it rendered, the device plugin's pod unchanged;
  * on (Kubernetes 1.34): NVIDIA's two DeviceClasses with NVIDIA's selectors; a ClusterRole of exactly
    claims get, its node's slices list/watch/create/update/delete, nodes get/list/watch; the policy
    that keeps the service account to its own node's slices; the DaemonSet running `gpulet dra` with
    NVIDIA's env names, kubelet's registration and plugins dirs (Bidirectional), the CDI dir, the
    driver's files read-only below /host, the boot id, the service account's token, privileged; the
    device plugin's pod sees kubelet's plugins_registry (read-only) to notice the DRA driver;
  * values: a driver name reaches the classes and the flag, feature gates become FEATURE_GATES,
    the schema refuses an unknown key and XIDs that are not numbers, a Kubernetes before 1.34 fails
    the render with the reason."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helm_lib  # noqa: E402
from plugin_lib import check  # noqa: E402

KUBE = "1.34.0"


def render(*sets, kube=KUBE):
    return helm_lib.template(sets=list(sets), kube_version=kube)


def one(docs, kind, name_end):
    hits = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(name_end)]
    check(len(hits) == 1, "%s *%s: %d rendered" % (kind, name_end, len(hits)))
    return hits[0]


def container(ds):
    return ds["spec"]["template"]["spec"]["containers"][0]


def env(c):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}


def test_off():
    docs = render(kube=KUBE)
    check(not [d for d in docs if d["kind"] in ("DeviceClass", "ValidatingAdmissionPolicy") or
               d["metadata"]["name"].endswith("-dra")], "DRA objects rendered by default")
    dp = one(docs, "DaemonSet", "-device-plugin")
    check("plugins-registry" not in {m["name"] for m in container(dp)["volumeMounts"]}, "the plugin mounts the registry")
    check("--kubernetes-enable-dra=true" not in container(one(docs, "DaemonSet", "-exporter"))["args"], "exporter DRA")


def test_on():
    docs = render("dra.enabled=true")
    classes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "DeviceClass"}
    check(sorted(classes) == ["gpu.nvidia.com", "mig.nvidia.com"], "classes: %s" % sorted(classes))
    for name, t in (("gpu.nvidia.com", "gpu"), ("mig.nvidia.com", "mig")):
        expr = classes[name]["spec"]["selectors"][0]["cel"]["expression"]
        check(expr == "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '%s'" % t,
              "%s: %s" % (name, expr))
    check(classes["gpu.nvidia.com"]["spec"].get("extendedResourceName") == "nvidia.com/gpu" and
          "extendedResourceName" not in classes["mig.nvidia.com"]["spec"], "extendedResourceName")

    role = one(docs, "ClusterRole", "-dra")
    rules = sorted((tuple(r["apiGroups"]), tuple(r["resources"]), tuple(sorted(r["verbs"]))) for r in role["rules"])
    check(rules == [(("",), ("nodes",), ("get", "list", "watch")),
                    (("resource.k8s.io",), ("resourceclaims",), ("get",)),
                    (("resource.k8s.io",), ("resourceslices",), ("create", "delete", "list", "update", "watch"))],
          "rules: %s" % rules)
    sa = one(docs, "ServiceAccount", "-dra")
    crb = one(docs, "ClusterRoleBinding", "-dra")
    check(crb["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                               "namespace": sa["metadata"]["namespace"]}], "binding: %s" % crb["subjects"])
    vap = one(docs, "ValidatingAdmissionPolicy", "-own-node-slices")
    check("system:serviceaccount:kube-system:" + sa["metadata"]["name"] in vap["spec"]["matchConditions"][0]["expression"],
          "policy matches: %s" % vap["spec"]["matchConditions"])
    one(docs, "ValidatingAdmissionPolicyBinding", "-own-node-slices")

    ds = one(docs, "DaemonSet", "-dra")
    pod = ds["spec"]["template"]["spec"]
    c = container(ds)
    check(c["command"] == ["/usr/bin/gpulet", "dra"] and "--root=/host" in c["args"], "command: %s %s" % (c["command"], c["args"]))
    e = env(c)
    check(e["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}} and e["CDI_ROOT"] == "/var/run/cdi" and
          e["KUBELET_REGISTRAR_DIRECTORY_PATH"] == "/var/lib/kubelet/plugins_registry" and
          e["KUBELET_PLUGINS_DIRECTORY_PATH"] == "/var/lib/kubelet/plugins" and e["NVIDIA_VISIBLE_DEVICES"] == "all",
          "env: %s" % e)
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    check(mounts["/host/var/lib/kubelet/plugins"].get("mountPropagation") == "Bidirectional", "plugins dir propagation")
    for path in ("/host/var/lib/kubelet/plugins_registry", "/host/var/run/cdi"):
        check(path in mounts and not mounts[path].get("readOnly"), "%s writable" % path)
    for path in ("/host/usr", "/host/dev", "/host/proc/driver", "/host/proc/sys/kernel/random/boot_id",
                 "/host/etc/ld.so.cache"):
        check(mounts.get(path, {}).get("readOnly"), "%s read-only" % path)
    check(pod["serviceAccountName"] == sa["metadata"]["name"] and pod["automountServiceAccountToken"] is True,
          "service account: %s" % pod.get("serviceAccountName"))
    check(c["securityContext"].get("privileged") is True, "privileged")
    dp = one(docs, "DaemonSet", "-device-plugin")
    reg = [m for m in container(dp)["volumeMounts"] if m["name"] == "plugins-registry"]
    check(reg == [{"name": "plugins-registry", "mountPath": "/var/lib/kubelet/plugins_registry", "readOnly": True}],
          "the plugin's view of the registry: %s" % reg)
    # the exporter attributes the claims' GPUs to their pods (docs/reference/dcgm-exporter.md section 10)
    check("--kubernetes-enable-dra=true" in container(one(docs, "DaemonSet", "-exporter"))["args"], "exporter DRA")


def test_values():
    docs = render("dra.enabled=true", "dra.driverName=gpu.example.com", "dra.featureGates.MPSSupport=false",
                  "dra.featureGates.NVMLDeviceHealthCheck=true", "dra.nodeSelector.gpu-pool=dra")
    expr = one(docs, "DeviceClass", "gpu.nvidia.com")["spec"]["selectors"][0]["cel"]["expression"]
    check("device.driver == 'gpu.example.com'" in expr, "class: %s" % expr)
    ds = one(docs, "DaemonSet", "-dra")
    c = container(ds)
    check("--driver-name=gpu.example.com" in c["args"], "args: %s" % c["args"])
    check(env(c)["FEATURE_GATES"] == "MPSSupport=false,NVMLDeviceHealthCheck=true", "gates: %s" % env(c))
    check(ds["spec"]["template"]["spec"]["nodeSelector"] == {"gpu-pool": "dra"}, "nodeSelector")
    for sets, words in ((("dra.enabled=true", "dra.bogus=1"), "bogus"),
                        (("dra.enabled=true", "dra.additionalXidsToIgnore=all"), "additionalXidsToIgnore")):
        try:
            render(*sets)
            check(False, "%s rendered" % (sets,))
        except RuntimeError as e:
            check(words in str(e), "%s: %s" % (sets, e))
    try:
        render("dra.enabled=true", kube="1.33.0")
        check(False, "rendered for 1.33")
    except RuntimeError as e:
        check("dra.enabled needs Kubernetes 1.34" in str(e), str(e))


def main():
    for t in (test_off, test_on, test_values):
        t()
        print("PASS %s" % t.__name__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
