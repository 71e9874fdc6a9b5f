#!/usr/bin/python3
"""Every spec `gpulet cdi generate` writes, judged by python3-jsonschema with the official CDI JSON
schema shipped by Debian (golang-github-container-orchestrated-devices-container-device-interface-dev,
schema/schema.json + defs.json). The schema's own good/bad test data is run first, so a harness that
accepts everything fails here.
"""
import glob
import json
import os
import sys
import tempfile
import warnings

import jsonschema
import yaml

from test_cdi_testlib import FIXTURES, check, finish, generate, load_fixture, mkroot

SCHEMA_DIR = "/usr/share/gocode/src/github.com/container-orchestrated-devices/container-device-interface/schema"
VARIANTS = [
    ["--format", "json"],
    ["--format", "yaml"],
    ["--format", "json", "--vendor", "k8s.device-plugin.nvidia.com", "--device-name-strategy", "uuid"],
    ["--format", "json", "--device-name-strategy", "index", "--driver-root", "/run/nvidia/driver"],
]
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
            if not load_fixture(fixture).get("gpus"):
                continue
            root = os.path.join(tmp, fixture)
            mkroot(root, fixture)
            # the driver root /run/nvidia/driver (GPU Operator layout) must exist: here it is the root itself
            os.makedirs(os.path.join(root, "run/nvidia"), exist_ok=True)
            os.symlink("../..", os.path.join(root, "run/nvidia/driver"))
            for args in VARIANTS:
                r = generate(fixture, root, args)
                where = f"{fixture} {' '.join(args)}"
                check(r.returncode == 0, f"{where}: rc {r.returncode} {r.stderr.strip()}")
                if r.returncode:
                    continue
                doc = yaml.safe_load(r.stdout) if "yaml" in args else json.loads(r.stdout)
                errs = errors(v, doc)
                check(not errs, f"{where}: schema errors: {errs[:5]}")
                n += 1
    return finish(f"{n} generated specs valid against the official CDI schema")


if __name__ == "__main__":
    sys.exit(main())
