#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Our workload YAML loader (src/kube/k8sobj.c, via build/k8s_dump) against PyYAML's safe_load_all
on the same files: same objects (Lists flattened), same scalar types; broken files rejected by both,
at the same line. YAML 1.1 words like yes/on/off are left out of the corpus: PyYAML reads them as
booleans and we keep them as strings; and 1e3 (a float for go-yaml, which kubectl uses, and for
us; a string for PyYAML, whose YAML 1.1 floats need a dot and a signed exponent).
Usage: test_k8sobj_peers.py PATH/TO/k8s_dump"""
import glob, json, os, re, subprocess, sys, yaml

DUMP = sys.argv[1]
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
files = sorted(glob.glob(f"{SRC}/tests/integration/k8s/*.yaml") + glob.glob(f"{SRC}/tests/lint/*.yaml") +
               glob.glob(f"{SRC}/tests/lint/*.json"))
errs = []
for f in files:
    try:
        docs = [d for d in yaml.safe_load_all(open(f)) if d is not None]
        ref = []
        for d in docs:
            if isinstance(d, dict) and str(d.get("kind", "")).endswith("List") and isinstance(d.get("items"), list):
                ref += d["items"]
            else:
                ref.append(d)
        ref_err = None
    except yaml.YAMLError as e:
        ref, ref_err = None, e
    p = subprocess.run([DUMP, f], capture_output=True, text=True)
    name = os.path.relpath(f, SRC)
    if ref_err is None:
        if p.returncode != 0:
            errs.append(f"{name}: PyYAML reads it, we fail: {p.stderr.strip()}")
        elif json.loads(p.stdout) != json.loads(json.dumps(ref)):
            errs.append(f"{name}: differs\n ours {p.stdout[:400]}\n pyyaml {json.dumps(ref)[:400]}")
    else:
        line = getattr(getattr(ref_err, "problem_mark", None), "line", None)
        m = re.match(r"[^:]*:(\d+):(\d+):", p.stderr)
        if p.returncode != 1 or not m:
            errs.append(f"{name}: PyYAML rejects it ({ref_err}), we rc={p.returncode} {p.stderr.strip()!r}")
        elif line is not None and int(m.group(1)) != line + 1:
            errs.append(f"{name}: error line ours {m.group(1)}, PyYAML {line + 1}")
print("\n".join(errs) if errs else f"OK: {len(files)} files read like PyYAML")
sys.exit(1 if errs else 0)
