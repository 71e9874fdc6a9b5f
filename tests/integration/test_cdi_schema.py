#!/usr/bin/python3
"""Every spec `gpulet cdi generate` writes, judged by python3-jsonschema with the official CDI JSON
schema shipped by Debian (golang-github-container-orchestrated-devices-container-device-interface-dev,
schema/schema.json + defs.json). The schema's own good/bad test data is run first, so a harness that
accepts everything fails here.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import warnings

import jsonschema
import yaml

SRC = os.environ["GPULET_SRC"]
BUILD = os.environ["GPULET_BUILD"]
GPULET = os.environ["GPULET"]
FAKE = os.environ["FAKE_NVML_LIB"]
SCHEMA_DIR = "/usr/share/gocode/src/github.com/container-orchestrated-devices/container-device-interface/schema"
FIXTURES = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(SRC, "tests/fixtures/*.json")))
VARIANTS = [
    ["--format", "json"],
    ["--format", "yaml"],
    ["--format", "json", "--vendor", "k8s.device-plugin.nvidia.com", "--device-name-strategy", "uuid"],
    ["--format", "json", "--device-name-strategy", "index", "--driver-root", "/run/nvidia/driver"],
]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def validator():
    path = os.path.join(SCHEMA_DIR, "schema.json")
    if not os.path.exists(path):
        print(f"FAIL: {path} missing: install golang-github-container-orchestrated-devices-container-device-interface-dev")
        sys.exit(1)
    with open(path) as f:
        schema = json.load(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        resolver = jsonschema.RefResolver(base_uri="file://" + SCHEMA_DIR + "/", referrer=schema)
    return jsonschema.Draft7Validator(schema, resolver=resolver)


def errors(v, doc):
    return ["%s: %s" % ("/".join(map(str, e.absolute_path)), e.message) for e in v.iter_errors(doc)]


def main():
    v = validator()
    # the harness itself: upstream's good specs pass, bad ones fail, and a broken field is caught
    for p in glob.glob(os.path.join(SCHEMA_DIR, "testdata/good/*.json")):
        check(not errors(v, json.load(open(p))), f"schema harness: good {p} rejected")
    for p in glob.glob(os.path.join(SCHEMA_DIR, "testdata/bad/*.json")):
        try:
            doc = json.load(open(p))
        except ValueError:
            continue  # not JSON at all
        check(errors(v, doc), f"schema harness: bad {p} accepted")
    bad = {"cdiVersion": "0.5.0", "kind": "a.com/bb",
           "devices": [{"name": "x", "containerEdits": {"deviceNodes": [{"path": 1}]}}]}
    check(errors(v, bad), "schema harness: deviceNodes[0].path = 1 accepted (defs.json refs not resolved?)")

    n = 0
    with tempfile.TemporaryDirectory(prefix="gpulet-cdi-schema.") as tmp:
        for fixture in FIXTURES:
            fxpath = os.path.join(SRC, "tests/fixtures", fixture + ".json")
            if not json.load(open(fxpath)).get("gpus"):
                continue
            root = os.path.join(tmp, fixture)
            subprocess.run(["sh", os.path.join(SRC, "tests/lib/mkroot.sh"), root, fixture], check=True,
                           capture_output=True, env=dict(os.environ, GPULET_BUILD=BUILD))
            for args in VARIANTS:
                r = subprocess.run([GPULET, "cdi", "generate", "--nvml-library", FAKE, "--root", root] + args,
                                   env=dict(os.environ, FAKE_NVML_FIXTURE=fxpath), capture_output=True,
                                   text=True, timeout=60)
                where = f"{fixture} {' '.join(args)}"
                check(r.returncode == 0, f"{where}: rc {r.returncode} {r.stderr.strip()}")
                if r.returncode:
                    continue
                doc = yaml.safe_load(r.stdout) if "yaml" in args else json.loads(r.stdout)
                errs = errors(v, doc)
                check(not errs, f"{where}: schema errors: {errs[:5]}")
                n += 1
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print(f"ok: {n} generated specs valid against the official CDI schema")
    return 0


if __name__ == "__main__":
    sys.exit(main())
