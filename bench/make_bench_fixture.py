#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The benchmark node: tests/fixtures/dgx-a100.json with MIG also on GPUs 4 and 5 (same layouts as
GPUs 6 and 7, fresh UUIDs): 8 GPUs and 14 MIG instances. usage: make_bench_fixture.py SRC OUT"""
import copy
import json
import sys

src, out = sys.argv[1], sys.argv[2]
doc = json.load(open(src))
gpus = doc["gpus"]
for dst, tmpl in ((4, 6), (5, 7)):
    gpus[dst]["mig_mode"] = 1
    gpus[dst]["mig"] = copy.deepcopy(gpus[tmpl]["mig"])
    for m in gpus[dst]["mig"]:
        for c in m["cis"]:
            c["uuid"] = c["uuid"][:-4] + "%02d%02d" % (dst, m["gi"])
    gpus[dst].setdefault("telemetry", {}).pop("processes", None)
n = sum(len(c["cis"]) for g in gpus for c in g.get("mig") or [])
assert len(gpus) == 8 and n == 14, (len(gpus), n)
json.dump(doc, open(out, "w"), indent=1)
