#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gpulet doctor usage errors: a --root that is not a directory and input files (--kernel-log, --pods,
--node, --containerd-config) that cannot be read are exit 2 with "what, where, what to do", not
findings about the node. Env GPULET, GPULET_SRC (set by CTest)."""
import os, subprocess, sys, tempfile

SRC = os.environ.get("GPULET_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPULET = os.environ.get("GPULET") or os.path.join(SRC, "build", "gpulet")
errs = []


def run(*args):
    p = subprocess.run([GPULET, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def usage_error(args, must):
    rc, out, err = run(*args)
    if rc != 2:
        errs.append(f"{' '.join(args)}: exit {rc}, expected 2 (stdout {out[:200]!r})")
    for m in must:
        if m not in err:
            errs.append(f"{' '.join(args)}: stderr lacks {m!r}: {err!r}")
    if "-1:-1" in err:
        errs.append(f"{' '.join(args)}: jansson's position leaks into the message: {err!r}")


with tempfile.TemporaryDirectory() as tmp:
    afile = os.path.join(tmp, "file")
    open(afile, "w").write("x\n")
    usage_error(["doctor", "--root", "/nonexistent-gpulet"], ["--root /nonexistent-gpulet", "--root /host"])
    usage_error(["doctor", "--root", afile], ["not a directory"])
    usage_error(["versions", "--root", "/nonexistent-gpulet"], ["--root /nonexistent-gpulet"])
    usage_error(["doctor", "--root", tmp, "--kernel-log", "/nonexist"], ["--kernel-log /nonexist", "journalctl -k"])
    usage_error(["doctor", "--root", tmp, "--pods", "/nonexist"], ["--pods /nonexist", "kubectl get pods"])
    usage_error(["doctor", "--root", tmp, "--node", tmp], ["--node", "Is a directory", "kubectl get node"])
    usage_error(["doctor", "--root", tmp, "--containerd-config", "/etc/nope.toml"],
                ["--containerd-config /etc/nope.toml", tmp + "/etc/nope.toml", "config.toml"])
    # readable inputs are not usage errors (the node itself is broken: exit 1)
    rc, out, err = run("doctor", "--root", tmp, "--pods", afile, "--kernel-log", afile)
    if rc != 1:
        errs.append(f"readable inputs on an empty root: exit {rc}, expected 1: {err!r}")

    # --only must not hide the root cause: devnode is skipped on an empty root because the driver
    # is not loaded, so the report shows driver.not-loaded and exits 1
    import json
    rc, out, err = run("doctor", "--root", tmp, "--only", "devnode", "--json")
    ids = [f["id"] for f in json.loads(out)["findings"]] if out.strip() else []
    if rc != 1 or "driver.not-loaded" not in ids:
        errs.append(f"--only devnode on a driverless root: exit {rc}, findings {ids}; expected driver.not-loaded, exit 1")
    rc, out, err = run("doctor", "--root", tmp, "--only", "devnode.missing")
    if rc != 1 or "driver.not-loaded" not in out:
        errs.append(f"--only devnode.missing (text) on a driverless root: exit {rc}, output lacks driver.not-loaded: {out!r}")
    rc, out, err = run("doctor", "--root", tmp, "--only", "toolkit", "--json")
    ids = [f["id"] for f in json.loads(out)["findings"]] if out.strip() else []
    if "driver.not-loaded" in ids:
        errs.append(f"--only toolkit (not blocked by the driver) shows unrelated findings: {ids}")
    usage_error(["doctor", "--root", tmp, "--only", "bogus.id"], ["--only bogus.id", "cdi.spec-missing", "devnode"])
    usage_error(["doctor", "--root", tmp, "--only", "cdi,nope"], ["--only nope"])

for e in errs:
    print("FAIL", e)
print("usage: %d failures" % len(errs))
sys.exit(1 if errs else 0)
