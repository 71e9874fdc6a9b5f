#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Run each libFuzzer target for N seconds, one after the other (nice -n 10), starting from the
# committed seeds. usage: tests/fuzz/run.sh [SECONDS=60] [BUILD_DIR=build-fuzz] [TARGET...]
# Build first: CC=clang cmake -S . -B build-fuzz -DGPULET_FUZZ=ON && cmake --build build-fuzz --target fuzz_all
# Prints one line per target: runs, seconds, exec/s, corpus size, crashes; a crash input is kept in
# build-fuzz/fuzz-artifacts/<target>/ — commit it under tests/fuzz/corpus/<target>/ as a reproducer.
# Exit 1 if any target crashed, leaked or timed out. FUZZ_EXTRA adds libFuzzer flags, e.g.
# FUZZ_EXTRA="-fork=1 -ignore_crashes=1" to keep going past a known crash.
set -u
secs=${1:-60}
build=${2:-build-fuzz}
shift $(($# > 2 ? 2 : $#))
src=$(cd "$(dirname "$0")/../.." && pwd)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for f in "$build"/fuzz/fuzz_*; do
		n=$(basename "$f")
		case $n in fuzz_replay_*) continue ;; esac
		targets+=("${n#fuzz_}")
	done
fi
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets in $build/fuzz; build with -DGPULET_FUZZ=ON" >&2; exit 1; }
fail=0
printf '%-12s %12s %8s %10s %8s %s\n' target runs seconds exec/s corpus result
for t in "${targets[@]}"; do
	bin=$build/fuzz/fuzz_$t
	work=$build/fuzz-work/$t
	art=$build/fuzz-artifacts/$t/
	mkdir -p "$work" "$art"
	log=$build/fuzz-work/$t.log
	nice -n 10 "$bin" ${FUZZ_EXTRA:-} -max_total_time="$secs" -timeout=10 -max_len=65536 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$art" "$work" "$src/tests/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	# fork mode (-fork=N) prints no final stats: take the last "#RUNS: cov: ..." progress line
	[ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$log" | tail -1)
	crashes=$(grep -c '^==[0-9]*==ERROR\|runtime error' "$log")
	took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
	took=${took:-$secs}
	corpus=$(ls "$work" | wc -l)
	if [ $rc -eq 0 ] && [ "$crashes" -eq 0 ]; then
		res=ok
	else
		res="FAILED rc=$rc, $crashes sanitizer reports (see $log, $art)"
		fail=1
	fi
	printf '%-12s %12s %8s %10s %8s %s\n' "$t" "${runs:-?}" "$took" "$(( ${runs:-0} / (took > 0 ? took : 1) ))" "$corpus" "$res"
done
exit $fail
