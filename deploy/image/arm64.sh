#!/bin/sh
# arm64.sh BUILD OUT SOURCE_DATE_EPOCH: OUT/rootfs-arm64.tar, the root of the arm64 image of the index
# build.sh writes. The same Debian 12 packages as the amd64 image ($GPULET_IMAGE_KEEP, $GPULET_IMAGE_LIBS:
# runtime-packages.sh read them off the amd64 build; the arm64 build links the same libraries of the
# same packages), for arm64 from the Debian archive (base.sh: mmdebstrap --architectures=arm64 with its
# own apt configuration, the same prune.sh; cached as OUT/arm64-base-KEY.tar), then gpulet cross-built with Debian's cross toolchain
# (gcc-aarch64-linux-gnu) in BUILD/arm64 against the arm64 root of cmake/cross/sysroot.sh, installed as in
# the amd64 image; its ld.so.cache made by arm64's own ldconfig (static) under qemu-aarch64-static, and
# gpulet started from the image root under qemu before the tar is written (mtimes SOURCE_DATE_EPOCH).
# Env: GPULET_IMAGE_KEEP, GPULET_IMAGE_LIBS, DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR, GPULET_JOBS (default 2).
set -eu
build=$1 out=$2 sde=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
for tool in aarch64-linux-gnu-gcc qemu-aarch64-static; do
	command -v $tool >/dev/null ||
		{ echo "arm64.sh: $tool is missing (gcc-aarch64-linux-gnu, qemu-user-static: make image-deps)" >&2; exit 1; }
done

sysroot=$("$src/cmake/cross/sysroot.sh" arm64)
tree=$build/arm64
[ -f "$tree/CMakeCache.txt" ] || cmake -S "$src" -B "$tree" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_TOOLCHAIN_FILE="$src/cmake/cross/aarch64.cmake" -DGPULET_SYSROOT="$sysroot" >/dev/null
echo "image: gpulet for arm64 in $tree (output in $tree/build.log)"
cmake --build "$tree" -j"${GPULET_JOBS:-2}" --target gpulet >"$tree/build.log" 2>&1 ||
	{ tail -n 30 "$tree/build.log"; echo "arm64.sh: the arm64 build failed" >&2; exit 1; }

base=$(sh "$src/deploy/image/base.sh" arm64 "$out")

root=$out/root-arm64
rm -rf "$root"
mkdir -p "$root"
tar -C "$root" -xf "$base"
sh "$src/deploy/image/finish-root.sh" "$root"
DESTDIR=$root cmake --install "$tree" --prefix /usr --strip >/dev/null
qemu-aarch64-static "$sysroot/sbin/ldconfig" -r "$root"
rm -rf "$root/var/cache"
qemu-aarch64-static -L "$root" "$root/usr/bin/gpulet" --help >/dev/null ||
	{ echo "arm64.sh: the arm64 gpulet does not start from the image root (under qemu)" >&2; exit 1; }
qemu-aarch64-static "$root/usr/bin/gpulet-cdi-hook" --help >/dev/null ||
	{ echo "arm64.sh: the arm64 /usr/bin/gpulet-cdi-hook does not run on its own (not static?)" >&2; exit 1; }
tar --sort=name --format=gnu --numeric-owner --owner=0 --group=0 --mtime="@$sde" -C "$root" -cf "$out/rootfs-arm64.tar" .
rm -rf "$root"
