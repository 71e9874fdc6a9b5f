#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# promtool (the peer) checks deploy/prometheus-rules.yaml: syntax (check rules) and behaviour
# (test rules with tests/rules/gpulet-rules.test.yaml). The PrometheusRule's spec is the rule file.
set -eu
src=${GPULET_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v promtool >/dev/null || { echo "promtool missing: install package prometheus (.ci/packages.txt)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$src/deploy/prometheus-rules.yaml" "$tmp/rules.yaml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
assert doc["kind"] == "PrometheusRule" and doc["apiVersion"] == "monitoring.coreos.com/v1", doc.get("kind")
rules = [r for g in doc["spec"]["groups"] for r in g["rules"]]
for r in rules:  # every alert tells the operator which doctor check to run
    assert "gpulet doctor" in r["annotations"]["runbook"], r["alert"]
yaml.safe_dump(doc["spec"], open(sys.argv[2], "w"), sort_keys=False)
PY
promtool check rules "$tmp/rules.yaml"
cp "$src"/tests/rules/*.test.yaml "$tmp/"
promtool test rules "$tmp"/*.test.yaml
# every alert in the file has a test
for a in $(grep -o 'alert: [A-Za-z]*' "$src/deploy/prometheus-rules.yaml" | cut -d' ' -f2); do
	cat "$src"/tests/rules/*.test.yaml | grep -q "alertname: $a\$" || { echo "alert $a has no promtool test"; exit 1; }
done
echo "rules OK"
