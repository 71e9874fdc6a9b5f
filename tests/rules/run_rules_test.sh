#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# promtool (the peer) checks deploy/prometheus-rules.yaml: syntax (check rules) and behaviour (test
# rules with tests/rules/gpulet-rules.test.yaml and issue14.test.yaml). The PrometheusRule's spec is
# the rule file. Then every test group of issue14.test.yaml runs alone on the rules as they were
# before issue 14 (prometheus-rules-before-issue14.yaml) and must FAIL there: each case shows a
# failure of the old rules, not just a behaviour of the new ones.
set -eu
src=${GPULET_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v promtool >/dev/null || { echo "promtool missing: install package prometheus (.ci/packages.txt)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/old"
/usr/bin/python3 - "$src" "$tmp" <<'PY'
import os, sys, yaml
src, tmp = sys.argv[1], sys.argv[2]

def spec(path, out, check_runbooks):
    doc = yaml.safe_load(open(path))
    assert doc["kind"] == "PrometheusRule" and doc["apiVersion"] == "monitoring.coreos.com/v1", doc.get("kind")
    for r in (r for g in doc["spec"]["groups"] for r in g["rules"]):
        # every alert tells the operator which doctor check to run
        assert not check_runbooks or "gpulet doctor" in r["annotations"]["runbook"], r["alert"]
    yaml.safe_dump(doc["spec"], open(out, "w"), sort_keys=False)

spec(os.path.join(src, "deploy", "prometheus-rules.yaml"), os.path.join(tmp, "rules.yaml"), True)
spec(os.path.join(src, "tests", "rules", "prometheus-rules-before-issue14.yaml"),
     os.path.join(tmp, "old", "rules.yaml"), False)
# one file per issue-14 case, for the old rules
doc = yaml.safe_load(open(os.path.join(src, "tests", "rules", "issue14.test.yaml")))
for i, t in enumerate(doc["tests"], 1):
    one = dict(doc, tests=[t])
    yaml.safe_dump(one, open(os.path.join(tmp, "old", "case%02d.test.yaml" % i), "w"), sort_keys=False)
PY
promtool check rules "$tmp/rules.yaml"
cp "$src"/tests/rules/*.test.yaml "$tmp/"
promtool test rules "$tmp"/*.test.yaml
n=0
for f in "$tmp"/old/case*.test.yaml; do
	n=$((n + 1))
	if promtool test rules "$f" >"$tmp/old/out" 2>&1; then
		echo "issue14.test.yaml case $n passes on the rules before issue 14: it shows no failure of them"
		exit 1
	fi
	echo "issue14 case $n fails on the old rules, as it must: $(grep -m1 -o 'alertname: [A-Za-z]*, time: [0-9a-z]*' "$tmp/old/out")"
done
[ "$n" -ge 7 ] || { echo "expected at least 7 issue-14 cases, found $n"; exit 1; }
# every alert in the file has a test
for a in $(grep -o 'alert: [A-Za-z]*' "$src/deploy/prometheus-rules.yaml" | cut -d' ' -f2); do
	cat "$src"/tests/rules/*.test.yaml | grep -q "alertname: $a\$" || { echo "alert $a has no promtool test"; exit 1; }
done
echo "rules OK"
