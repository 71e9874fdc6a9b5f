#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Exporter benchmarks: render cost at the server (C, vs a snprintf floor) and HTTP scrapes with
# RSS/CPU (vs a /healthz floor). usage: bench/bench_exporter.sh [BUILD_DIR] [SCRAPES]
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$src/bench/make_bench_fixture.py" "$src/tests/fixtures/dgx-a100.json" "$tmp/bench.json"
FAKE_NVML_FIXTURE="$tmp/bench.json" "$build/bench_exporter" "$build/fakenvml/libnvidia-ml.so.1" 5000
GPULET_SRC="$src" GPULET_BUILD="$build" /usr/bin/python3 "$src/bench/bench_exporter.py" "${2:-10000}"
