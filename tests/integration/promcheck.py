#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Judge a scrape with promtool (the independent peer), allowing only dcgm-exporter's own lint debts.

promtool check metrics exits 1 on a parse error and 3 on lint problems. Two lint rules cannot be
met while keeping dcgm-exporter's names, which Grafana dashboards depend on (monitoring-doctor.md A1/A2):
  * the label `modelName` is camelCase;
  * dcgm counters such as DCGM_FI_DEV_ECC_DBE_VOL_TOTAL / DCGM_FI_DEV_RETIRED_SBE lack a lowercase `_total`,
    and DCGM_FI_DEV_PCIE_REPLAY_COUNTER has 'counter' in its name.
So: (1) the raw scrape must parse (rc 0 or 3, never 1); (2) with modelName renamed to model_name, the only
lint lines left must be the `_total` rule on DCGM_* counters; every gpulet_* metric must be clean.
usage: promcheck.py < scrape.txt   (exit 0 = pass; prints what failed)
"""
import re
import subprocess
import sys

ALLOWED = re.compile(r'^DCGM_(?:FI|EXP)_[A-Z0-9_]+ counter metrics should have "_total" suffix$'
                     # dcgm-exporter's default counter DCGM_FI_DEV_PCIE_REPLAY_COUNTER (issue 14)
                     r"|^DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'$")


def promtool(text):
    p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True)
    return p.returncode, (p.stdout + p.stderr).decode()


def main():
    text = sys.stdin.read()
    if not text.strip():
        print("promcheck: empty scrape")
        return 1
    rc, out = promtool(text)
    if rc not in (0, 3):
        print("promcheck: promtool could not parse the scrape (rc %d):\n%s" % (rc, out))
        return 1
    # promtool does not notice two samples of one series; Prometheus rejects such a scrape
    seen = set()
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.partition("{")
        labels = tuple(sorted(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', rest))) if rest else ()
        key = (name.split(" ")[0], labels)
        if key in seen:
            print("promcheck: duplicate series: %s" % line)
            return 1
        seen.add(key)
    renamed = text.replace("modelName=", "model_name=")
    rc, out = promtool(renamed)
    bad = [l for l in out.splitlines() if l.strip() and not ALLOWED.match(l.strip())]
    if rc not in (0, 3) or bad:
        print("promcheck: lint problems beyond dcgm-exporter's names (rc %d):\n%s" % (rc, "\n".join(bad)))
        return 1
    gpulet = "".join(l + "\n" for l in renamed.splitlines() if re.match(r"^(# (HELP|TYPE) )?gpulet_", l))
    rc, out = promtool(gpulet)
    if rc != 0:
        print("promcheck: gpulet_* metrics are not lint clean (rc %d):\n%s" % (rc, out))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
