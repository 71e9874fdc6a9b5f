#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# NVML ABI conformance against the real driver (tests/realdriver/abi_check.c): compiled here, at
# test time, because NVIDIA's nvml.h arrives with the realdriver fixture (tests/lib/realdriver.py).
set -eu
: "${GPULET_SRC:?}" "${GPULET_BUILD:?}"
eval "$(/usr/bin/python3 "$GPULET_SRC/tests/lib/realdriver.py" env "$GPULET_BUILD/realdriver")"
[ -f "$REALDRIVER_NVML_H" ] || { echo "FAIL: $REALDRIVER_NVML_H missing: the realdriver_setup fixture failed" >&2; exit 1; }
out="$GPULET_BUILD/realdriver/abi"
mkdir -p "$out"
cc="${CC:-cc}"
flags="-std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -I$GPULET_SRC/src -I$GPULET_SRC/tests/realdriver"
# abi_real.c sees only NVIDIA's header; abi_check.c only ours.
$cc $flags -isystem "$(dirname "$REALDRIVER_NVML_H")" -c "$GPULET_SRC/tests/realdriver/abi_real.c" -o "$out/abi_real.o"
$cc $flags "$GPULET_SRC/tests/realdriver/abi_check.c" "$out/abi_real.o" -ldl -o "$out/abi_check"
exec "$out/abi_check" "$REALDRIVER_NVML"
