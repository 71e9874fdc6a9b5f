#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fakenvml_mkroot: a fake node root for dgx-a100 is what gpulet's tests rely on. Checked with the
# system's own tools (ldconfig, stat, the ELF SONAME through readelf), not with our code.
set -euo pipefail
: "${GPULET_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${GPULET_BUILD:=$GPULET_SRC/build}"
export GPULET_BUILD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
root=$tmp/root

"$GPULET_SRC/tests/lib/mkroot.sh" "$root" dgx-a100

# ld.so.cache written by ldconfig -r, read back by ldconfig itself.
cache=$(ldconfig -p -C "$root/etc/ld.so.cache")
for so in libcuda.so.1 libnvidia-ml.so.1 libnvidia-ptxjitcompiler.so.1 libnvidia-nvvm.so.4 libnvidia-cfg.so.1 \
	libnvidia-allocator.so.1 libnvidia-gpucomp.so.550.54.15 libcudadebugger.so.1 libnvidia-opencl.so.1; do
	grep -q "^[[:space:]]*$so (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/$so\$" <<<"$cache" ||
		fail "$so not in the ld.so.cache: $cache"
done
# SONAME chain as the driver installs it, and a real ELF with that SONAME.
[ "$(readlink "$root/usr/lib/x86_64-linux-gnu/libcuda.so.1")" = libcuda.so.550.54.15 ] || fail "libcuda.so.1 link"
[ "$(readlink "$root/usr/lib/x86_64-linux-gnu/libcuda.so")" = libcuda.so.1 ] || fail "libcuda.so link"
readelf -d "$root/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15" | grep -q 'Library soname: \[libcuda.so.1\]' ||
	fail "libcuda SONAME"

# Device nodes are character devices with the NVIDIA numbers.
for i in 0 1 2 3 4 5 6 7; do
	[ -c "$root/dev/nvidia$i" ] || fail "dev/nvidia$i is not a char device"
	[ "$(stat -c '%t:%T' "$root/dev/nvidia$i")" = "c3:$(printf %x "$i")" ] || fail "dev/nvidia$i numbers"
done
for n in nvidiactl nvidia-uvm nvidia-uvm-tools nvidia-modeset; do
	[ -c "$root/dev/$n" ] || fail "dev/$n"
done
[ "$(stat -c '%t:%T' "$root/dev/nvidiactl")" = c3:ff ] || fail "nvidiactl is 195:255"

# mig-minors: the full table, and cap nodes for the fixture's MIG instances (GPU 6 GI 2 CI 0).
mm=$root/proc/driver/nvidia-caps/mig-minors
[ "$(wc -l <"$mm")" = 4322 ] || fail "mig-minors has $(wc -l <"$mm") lines"
grep -qx 'config 1' "$mm" && grep -qx 'monitor 2' "$mm" || fail "config/monitor lines"
grep -qx 'gpu0/gi2/access 21' "$mm" || fail "gpu0/gi2/access"
grep -qx 'gpu6/gi2/access 831' "$mm" && grep -qx 'gpu6/gi2/ci0/access 832' "$mm" || fail "gpu6/gi2 lines"
for m in 1 2 831 832 840 841 894 895 903 904; do
	[ -c "$root/dev/nvidia-caps/nvidia-cap$m" ] || fail "nvidia-cap$m"
done
[ "$(stat -c '%t:%T' "$root/dev/nvidia-caps/nvidia-cap832")" = 1fc:340 ] || fail "nvidia-cap832 numbers"

# proc/sys/firmware/binaries/sockets.
grep -q '^NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15 ' "$root/proc/driver/nvidia/version" ||
	fail "NVRM version line"
[ "$(cat "$root/sys/bus/pci/devices/0000:b7:00.0/numa_node")" = 1 ] || fail "numa_node of GPU 6"
[ "$(cat "$root/sys/bus/pci/devices/0000:07:00.0/numa_node")" = 0 ] || fail "numa_node of GPU 0"
ls "$root"/lib/firmware/nvidia/550.54.15/gsp_*.bin >/dev/null || fail "GSP firmware"
[ -x "$root/usr/bin/nvidia-smi" ] || fail "nvidia-smi"
[ -S "$root/run/nvidia-persistenced/socket" ] || fail "persistenced socket"
[ -S "$root/run/nvidia-fabricmanager/socket" ] || fail "fabricmanager socket (NVSwitch node)"

# Options: no device nodes; plain files; a T4 root without MIG caps; the fake NVML as the driver's.
"$GPULET_SRC/tests/lib/mkroot.sh" "$tmp/nodev" single-t4 --no-devnodes --no-sockets
[ ! -e "$tmp/nodev/dev" ] || fail "--no-devnodes made dev/"
[ ! -e "$tmp/nodev/run" ] || fail "--no-sockets made run/"
grep -q ' 535.161.08 ' "$tmp/nodev/proc/driver/nvidia/version" || fail "T4 driver version"
ldconfig -p -C "$tmp/nodev/etc/ld.so.cache" | grep -q 'libcuda.so.1 ' || fail "T4 libcuda"
"$GPULET_SRC/tests/lib/mkroot.sh" "$tmp/plain" dgx-a100 --plain-devnodes --no-sockets
[ -f "$tmp/plain/dev/nvidia0" ] && [ ! -c "$tmp/plain/dev/nvidia0" ] || fail "--plain-devnodes"
if [ -e "$GPULET_BUILD/fakenvml/libnvidia-ml.so.1" ]; then
	"$GPULET_SRC/tests/lib/mkroot.sh" "$tmp/withnvml" single-t4 --with-fakenvml --no-devnodes --no-sockets
	nm -D --defined-only "$tmp/withnvml/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1" | grep -q ' nvmlInit_v2$' ||
		fail "--with-fakenvml did not install the fake"
fi
# DRM nodes, MPS pipe dir, device modes/group, a kernel module newer than the libraries.
"$GPULET_SRC/tests/lib/mkroot.sh" "$tmp/opt" pcie-4gpu --drm --mps --dev-mode 0660 --dev-gid 44 --kernel-version 550.90.07
[ "$(stat -c '%t:%T' "$tmp/opt/dev/dri/renderD131")" = e2:83 ] || fail "--drm renderD131 is 226:131"
[ "$(readlink "$tmp/opt/dev/dri/by-path/pci-0000:ca:00.0-card")" = ../card2 ] || fail "--drm by-path link"
[ -d "$tmp/opt/sys/bus/pci/devices/0000:e3:00.0/drm/card3" ] || fail "--drm sysfs entry"
[ -S "$tmp/opt/tmp/nvidia-mps/control" ] || fail "--mps control socket"
[ "$(stat -c '%a %g' "$tmp/opt/dev/nvidia1")" = "660 44" ] || fail "--dev-mode/--dev-gid: $(stat -c '%a %g' "$tmp/opt/dev/nvidia1")"
grep -q ' 550.90.07 ' "$tmp/opt/proc/driver/nvidia/version" || fail "--kernel-version in proc"
[ -e "$tmp/opt/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15" ] || fail "libraries keep the fixture's version"
[ ! -e "$tmp/opt/dev/nvidia-caps" ] || fail "no MIG on pcie-4gpu: no nvidia-caps"

# MIG caps for the CI split (gpu0/gi2/ci2 -> 3+2*9+1+2 = 24).
"$GPULET_SRC/tests/lib/mkroot.sh" "$tmp/split" mig-ci-split --no-sockets
[ -c "$tmp/split/dev/nvidia-caps/nvidia-cap24" ] || fail "mig-ci-split: nvidia-cap24 (gpu0/gi2/ci2)"

# Rebuilding over an existing root works and is fast (the stub libraries are cached).
start=$(date +%s%N)
"$GPULET_SRC/tests/lib/mkroot.sh" "$root" dgx-a100
echo "mkroot over an existing root: $((($(date +%s%N) - start) / 1000000)) ms"
echo "fakenvml_mkroot: ok"
