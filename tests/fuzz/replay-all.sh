#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Replays every committed corpus file through its fuzz target (built without libFuzzer as
# $GPULET_BUILD/fuzz/fuzz_replay_<target>). usage: replay-all.sh TARGET...
# A target without corpus files, a missing binary, a crash or a sanitizer report fails.
set -u
src=${GPULET_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${GPULET_BUILD:-$src/build}
fail=0
for t in "$@"; do
	bin=$build/fuzz/fuzz_replay_$t
	dir=$src/tests/fuzz/corpus/$t
	if [ ! -x "$bin" ]; then
		echo "FAIL $t: $bin not built"
		fail=1
		continue
	fi
	if [ ! -d "$dir" ]; then
		echo "FAIL $t: no corpus dir $dir"
		fail=1
		continue
	fi
	if out=$("$bin" "$dir" 2>&1); then
		echo "PASS $t: $(echo "$out" | tail -1)"
	else
		echo "FAIL $t: replay exited non-zero; last lines:"
		echo "$out" | tail -30
		fail=1
	fi
done
exit $fail
