#!/usr/bin/python3
"""Black-box tests of the `gpulet cdi` command line: help and usage exit codes, --output forms
(stdout, DIR/, FILE.json, FILE.yaml, refusing FILE.yml and a foreign file), `cdi list` text and
JSON against the files written, and `cdi validate` exit codes, --json shape and --runtime-user.
"""
import json
import os
import stat
import sys
import tempfile

import yaml

from test_cdi_testlib import check, finish, generate, gpulet, mkroot

FIXTURE = "single-t4"


def main():
    r = gpulet(["cdi", "--help"])
    check(r.returncode == 0 and "Example:" in r.stdout, "cdi --help")
    for verb in ("generate", "list", "validate"):
        r = gpulet(["cdi", verb, "--help"])
        check(r.returncode == 0 and "Example:" in r.stdout and f"gpulet cdi {verb}" in r.stdout, f"{verb} --help")
    for args in (["cdi"], ["cdi", "bogus"], ["cdi", "generate", "--format", "xml"],
                 ["cdi", "generate", "--device-name-strategy", "type-index"], ["cdi", "validate", "--runtime", "nope"],
                 ["cdi", "validate", "--runtime-user", "x"], ["cdi", "list", "extra"]):
        r = gpulet(args)
        check(r.returncode == 2, f"{' '.join(args)}: usage error exit 2, got {r.returncode}")

    with tempfile.TemporaryDirectory(prefix="gpulet-cdi-cli.") as tmp:
        root = os.path.join(tmp, "node")
        mkroot(root, FIXTURE)
        out = os.path.join(root, "var/run/cdi")

        r = generate(FIXTURE, root, [])
        check(r.returncode == 0 and r.stdout.startswith("---\n"), "default output: YAML on stdout")
        check(yaml.safe_load(r.stdout)["kind"] == "nvidia.com/gpu", "default kind nvidia.com/gpu")

        r = generate(FIXTURE, root, ["--output", out + "/", "--format", "json", "--no-all-device"])
        path = os.path.join(out, "nvidia.com-gpu.json")
        check(r.returncode == 0 and os.path.exists(path), f"--output DIR/: {r.stderr.strip()}")
        check(stat.S_IMODE(os.stat(path).st_mode) == 0o644, "spec mode 0644")
        check("all" not in [d["name"] for d in json.load(open(path))["devices"]], "--no-all-device")

        r = generate(FIXTURE, root, ["--output", os.path.join(out, "other.yaml"), "--vendor", "example.com"])
        check(r.returncode == 0 and open(os.path.join(out, "other.yaml")).read().startswith("---\n"),
              "--output FILE.yaml is YAML")
        r = generate(FIXTURE, root, ["--output", os.path.join(out, "x.yml")])
        check(r.returncode == 1 and ".json or .yaml" in r.stderr, "--output FILE.yml refused")
        foreign = os.path.join(out, "foreign.json")
        with open(foreign, "w") as f:
            f.write('{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[]}')
        r = generate(FIXTURE, root, ["--output", foreign])
        check(r.returncode == 1 and "not written by gpulet" in r.stderr, "a foreign file is not replaced")
        os.unlink(foreign)

        # list: both files, the later kind sorted, text and JSON agree
        r = gpulet(["cdi", "list", "--dir", out])
        lines = r.stdout.splitlines()
        check(r.returncode == 0 and "example.com/gpu=0\t" + os.path.join(out, "other.yaml") in lines,
              f"list text: {lines}")
        js = json.loads(gpulet(["cdi", "list", "--json", "--dir", out]).stdout)
        check([e["name"] for e in js] == [l.split("\t")[0] for l in lines], "list --json = list text")
        check(all(set(e) >= {"name", "kind", "device", "file", "shadows", "conflict"} for e in js),
              "list --json fields")
        r = gpulet(["cdi", "list", "--root", tmp])
        check(r.returncode == 0 and "no CDI devices" in r.stderr, "list with no spec dirs says so")

        # validate: clean dir exit 0; --root makes /etc/cdi and /var/run/cdi relative to it
        r = gpulet(["cdi", "validate", "--root", root])
        check(r.returncode == 0 and "2 files checked, 0 errors" in r.stdout, f"validate --root: {r.stdout}")
        bad = os.path.join(out, "bad.json")
        with open(bad, "w") as f:
            f.write('{"cdiVersion":"0.6.0","kind":"x.com/y","devices":[{"name":"b c","containerEdits":{}}]}')
        r = gpulet(["cdi", "validate", "--json", "--runtime", "podman-4.3", "--root", root])
        doc = json.loads(r.stdout)
        codes = sorted(p["code"] for p in doc["problems"] if p["file"] == bad)
        check(r.returncode == 1 and codes == ["class-too-short", "empty-edits", "invalid-device-name",
                                             "version-too-new"], f"validate --json codes {codes}")
        check(doc["files"] == 3 and doc["errors"] == 4, f"validate --json counts {doc['files']} {doc['errors']}")
        p = next(p for p in doc["problems"] if p["code"] == "invalid-device-name")
        check(p["path"] == "$.devices[0].name" and p["category"] == "spec-invalid" and p["fix"], "problem fields")
        r = gpulet(["cdi", "validate", "--runtime-cdi-version", "0.6.0", bad])
        check(r.returncode == 1 and "version-too-new" not in r.stdout, "--runtime-cdi-version 0.6.0 accepts 0.6.0")
        os.unlink(bad)
        os.chmod(path, 0o600)
        r = gpulet(["cdi", "validate", "--runtime-user", "1000:1000", "--root", root])
        check(r.returncode == 1 and "error[unreadable]" in r.stdout, f"--runtime-user: {r.stdout}")
    return finish("cdi command line")


if __name__ == "__main__":
    sys.exit(main())
