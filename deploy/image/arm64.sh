#!/bin/sh
# arm64.sh BUILD OUT KEEP LIBS SOURCE_DATE_EPOCH: OUT/rootfs-arm64.tar, the root of the arm64 image of the
# index build.sh writes. The same Debian 12 packages as the amd64 image (KEEP, LIBS: runtime-packages.sh
# read them off the amd64 build; the arm64 build links the same libraries of the same packages), for
# arm64 from the Debian archive (mmdebstrap --architectures=arm64 with its own apt configuration, the
# same prune.sh; cached as OUT/arm64-base-KEY.tar), then gpulet cross-built with Debian's cross toolchain
# (gcc-aarch64-linux-gnu) in BUILD/arm64 against the arm64 root of cmake/cross/sysroot.sh, installed as in
# the amd64 image; its ld.so.cache made by arm64's own ldconfig (static) under qemu-aarch64-static, and
# gpulet started from the image root under qemu before the tar is written (mtimes SOURCE_DATE_EPOCH).
# Env: DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR, GPULET_JOBS (default 2).
set -eu
build=$1 out=$2 keep=$3 libs=$4 sde=$5
src=$(cd "$(dirname "$0")/../.." && pwd)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
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

sources="deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main"
key=$( (printf '%s\n' arm64 "$keep" "$libs" "$sources"; cat "$src/deploy/image/prune.sh") | sha256sum | cut -c1-16)
base=$out/arm64-base-$key.tar
if [ ! -s "$base" ]; then
	echo "image: mmdebstrap of $(printf '%s\n' "$keep" | wc -l) arm64 packages from $mirror (cached as $base)"
	GPULET_IMAGE_KEEP=$keep GPULET_IMAGE_LIBS=$libs GPULET_IMAGE_MULTIARCH=aarch64-linux-gnu \
		mmdebstrap --quiet --variant=extract --mode=root --architectures=arm64 --format=tar --skip=output/dev \
		--include="$(printf '%s\n' "$keep" | paste -sd,)" \
		--extract-hook="$src/deploy/image/prune.sh \"\$1\"" \
		bookworm "$base.part" "$sources" || {
		rm -f "$base.part"
		echo "arm64.sh: mmdebstrap failed: is the Debian archive ($mirror) reachable?" >&2
		exit 3
	}
	mv "$base.part" "$base"
	find "$out" -maxdepth 1 -name 'arm64-base-*.tar' ! -name "arm64-base-$key.tar" -delete
fi

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
