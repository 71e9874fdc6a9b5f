#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gpulet lint black-box: each entry of tests/lint/expect.json names a manifest, the flags, and the
finding ids that must be fail / warn / absent. Also feeds one manifest through stdin ("-")."""
import json, os, subprocess, sys

SRC = os.environ.get("GPULET_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPULET = os.environ.get("GPULET") or os.path.join(SRC, "build", "gpulet")
HERE = os.path.join(SRC, "tests", "lint")
errs = []

for name, e in json.load(open(os.path.join(HERE, "expect.json"))).items():
    f = os.path.join(HERE, e.get("file", name))
    args = [a if a != "node.json" else os.path.join(HERE, a) for a in e.get("args", [])]
    p = subprocess.run([GPULET, "lint", "--json", *args, f], capture_output=True, text=True)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        errs.append(f"{name}: not JSON rc={p.returncode}: {p.stdout[:200]} {p.stderr[:200]}")
        continue
    got = {x["id"]: x for x in doc["findings"]}
    for sev in ("fail", "warn"):
        for i in e.get(sev, []):
            if i not in got or got[i]["severity"] != sev:
                errs.append(f"{name}: expected {i} {sev}, got {got.get(i, {}).get('severity', 'nothing')}")
    for i in e.get("absent", []):
        if i in got:
            errs.append(f"{name}: {i} must not be reported: {got[i]['evidence']}")
    if "fix" in e and not any(e["fix"] in x["fix"] for x in got.values()):
        errs.append(f"{name}: no fix says {e['fix']!r}: {[x['fix'] for x in got.values()]}")
    if "no_fix" in e and any(e["no_fix"] in x["fix"] for x in got.values()):
        errs.append(f"{name}: a fix says {e['no_fix']!r}, wrong for this input")
    if "evidence" in e and not any(e["evidence"] in ev for x in got.values() for ev in x["evidence"]):
        errs.append(f"{name}: no evidence mentions {e['evidence']!r}")
    want = e.get("exit", 1 if e.get("fail") else 0)
    if p.returncode != want:
        errs.append(f"{name}: exit {p.returncode}, expected {want}")
    for x in doc["findings"]:
        if x["component"] != "lint" or not x["fix"] or not x["evidence"]:
            errs.append(f"{name}: {x['id']} lacks component lint, fix or evidence")
    # the readable report: a manifest's findings are on no link of the chain and lint has no ok checks
    t = subprocess.run([GPULET, "lint", *args, f], capture_output=True, text=True).stdout
    tail = t.strip().splitlines()[-1] if t.strip() else ""
    if doc["findings"] and (" ok" in tail or "lint link" in t or not tail.endswith("warn")):
        errs.append(f"{name}: the text report's end is noise ('0 ok', '(lint link)'): {t[-300:]!r}")

# stdin, and usage errors
p = subprocess.run([GPULET, "lint", "--json", "-"], input=open(os.path.join(HERE, "requests-only.yaml")).read(),
                   capture_output=True, text=True)
if p.returncode != 1 or "lint.gpu-requests-without-limits" not in p.stdout or "<stdin>" not in p.stdout:
    errs.append(f"stdin: rc={p.returncode} {p.stdout[:300]}")
if subprocess.run([GPULET, "lint"], capture_output=True).returncode != 2:
    errs.append("no FILE must be a usage error (exit 2)")

print("\n".join(errs) if errs else "OK: lint expectations hold")
sys.exit(1 if errs else 0)
