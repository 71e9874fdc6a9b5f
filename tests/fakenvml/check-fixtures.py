#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""fakenvml_fixtures: every tests/fixtures/*.json (or the files given) is a valid, self-consistent node.

Schema (tests/fakenvml/fixture.schema.json, checked by python3-jsonschema, draft-07) catches typos
that the fake would silently answer NOT_SUPPORTED for. Then facts no schema can say: model
references, unique UUIDs/minors/bus ids, an NxN topology, MIG instances that fit their GPU, and
each CI's `profile_name` equal to the name go-nvlib's rule gives (docs/reference/nvml-abi.md), computed
here independently of gpulet's C code.
"""
import glob, json, math, os, sys

import jsonschema

SRC = os.environ.get("GPULET_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
errors = []


def err(path, msg):
    errors.append("%s: %s" % (os.path.relpath(path, SRC), msg))


def profile_name(gi_slices, ci_slices, mem_mb, total_mib, suffix=""):
    # go-nvlib mig_profile.go: gb = round(ceil(mem/total*8)/8 * ceil(total GiB)); "<c>c." when CI < GI.
    total = total_mib * 2**20
    gb = round(math.ceil(mem_mb * 2**20 / total * 8) / 8 * math.ceil(total / 2**30))
    name = "%dg.%dgb%s" % (gi_slices, gb, suffix)
    return name if ci_slices == gi_slices else "%dc.%s" % (ci_slices, name)


def check(path, schema):
    with open(path) as f:
        fx = json.load(f)
    for e in jsonschema.Draft7Validator(schema).iter_errors(fx):
        err(path, "schema: %s at /%s" % (e.message, "/".join(str(p) for p in e.absolute_path)))
    models = fx.get("models", {})
    gpus = fx.get("gpus", [])
    uuids = set()
    for key in ("uuid", "minor", "pci_bus_id"):
        vals = [str(g.get(key)).lower() for g in gpus]
        if len(set(vals)) != len(vals):
            err(path, "GPU %s values repeat: %s" % (key, vals))
    pcie = fx.get("topology", {}).get("pcie")
    if pcie is not None:
        n = len(gpus)
        if len(pcie) != n or any(len(r) != n for r in pcie):
            err(path, "topology.pcie must be %dx%d" % (n, n))
        elif any(pcie[i][j] != pcie[j][i] for i in range(n) for j in range(n)) or any(pcie[i][i] for i in range(n)):
            err(path, "topology.pcie must be symmetric with a 0 diagonal")
    for i, g0 in enumerate(gpus):
        if g0.get("model") not in models:
            err(path, "gpus[%d] names model %r which is not in models" % (i, g0.get("model")))
            continue
        g = dict(models[g0["model"]], **g0)
        profiles = {p["profile"]: p for p in g.get("gi_profiles", [])}
        if g.get("mig") and not g.get("mig_capable"):
            err(path, "gpus[%d] has MIG instances but is not mig_capable" % i)
        used, gis, n_migs = set(), set(), 0
        for gi in g.get("mig", []):
            p = profiles.get(gi["gi_profile"])
            if not p:
                err(path, "gpus[%d] GI %d: gi_profile %d not in the model's gi_profiles" % (i, gi["gi"], gi["gi_profile"]))
                continue
            if gi["gi"] in gis:
                err(path, "gpus[%d]: GI id %d repeats" % (i, gi["gi"]))
            gis.add(gi["gi"])
            start, size = gi.get("placement", [None, None])
            if start is not None:
                mem_slices = set(range(start, start + size))
                if max(mem_slices) > 7 or mem_slices & used:
                    err(path, "gpus[%d] GI %d: placement %s overlaps or leaves the 8 memory slices" % (i, gi["gi"], gi["placement"]))
                used |= mem_slices
            ci_total = 0
            for ci in gi["cis"]:
                n_migs += 1
                if ci["uuid"] in uuids:
                    err(path, "MIG uuid %s repeats" % ci["uuid"])
                uuids.add(ci["uuid"])
                cs = ci.get("ci_slices", p["slices"])
                ci_total += cs
                suffix = p.get("name", "").partition("+")[2]
                want = profile_name(p["slices"], cs, p["memory_mb"], g["memory_mib"], "+" + suffix if suffix else "")
                if "profile_name" in ci and ci["profile_name"] != want:
                    err(path, "gpus[%d] GI %d CI %d: profile_name %s, the naming rule gives %s" %
                        (i, gi["gi"], ci["ci"], ci["profile_name"], want))
            if ci_total > p["slices"]:
                err(path, "gpus[%d] GI %d: compute instances use %d of %d slices" % (i, gi["gi"], ci_total, p["slices"]))
        if n_migs > g.get("max_mig_devices", 0) and n_migs:
            err(path, "gpus[%d]: %d MIG devices > max_mig_devices" % (i, n_migs))
    for name, m in models.items():
        for p in m.get("gi_profiles", []):
            want = profile_name(p["slices"], p["slices"], p["memory_mb"], m["memory_mib"])
            if p.get("name") and p["name"].partition("+")[0] != want:
                err(path, "model %s profile %d: name %s, the naming rule gives %s" % (name, p["profile"], p["name"], want))


def main():
    with open(os.path.join(SRC, "tests/fakenvml/fixture.schema.json")) as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    files = sys.argv[1:] or sorted(glob.glob(os.path.join(SRC, "tests/fixtures/*.json")) +
                                   glob.glob(os.path.join(SRC, "tests/fixtures/extra/*.json")))
    for path in files:
        check(path, schema)
    for e in errors:
        print("FAIL: " + e, file=sys.stderr)
    print("fakenvml_fixtures: %d fixtures, %d problems" % (len(files), len(errors)))
    return 1 if errors or not files else 0


if __name__ == "__main__":
    sys.exit(main())
