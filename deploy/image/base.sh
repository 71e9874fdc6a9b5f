#!/bin/sh
# base.sh ARCH OUT: the Debian 12 root of an image for ARCH (amd64, arm64) as a tar, printed: the packages
# of $GPULET_IMAGE_KEEP for ARCH from the Debian archive (mmdebstrap --variant=extract --architectures=ARCH,
# with its own apt configuration: no shell, no apt, no dpkg in it; prune.sh drops the dependencies gpulet
# never loads and the docs, and writes the dpkg status of exactly the packages kept), cached as
# OUT/ARCH-base-KEY.tar, KEY from the package list, the mirrors and prune.sh, so a rerun with the same
# libraries does not touch the network. Env: GPULET_IMAGE_KEEP, GPULET_IMAGE_LIBS (prune.sh's),
# DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR.
set -eu
arch=$1 out=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
case $arch in
amd64) multiarch=x86_64-linux-gnu ;;
arm64) multiarch=aarch64-linux-gnu ;;
*) echo "base.sh: no image for architecture $arch" >&2; exit 1 ;;
esac
sources="deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main"
key=$( (printf '%s\n' "$arch" "$GPULET_IMAGE_KEEP" "$GPULET_IMAGE_LIBS" "$sources"; cat "$src/deploy/image/prune.sh") |
	sha256sum | cut -c1-16)
base=$out/$arch-base-$key.tar
if [ ! -s "$base" ]; then
	echo "image: mmdebstrap of $(printf '%s\n' "$GPULET_IMAGE_KEEP" | wc -l) $arch packages from $mirror (cached as $base)" >&2
	GPULET_IMAGE_MULTIARCH=$multiarch mmdebstrap --quiet --variant=extract --mode=root --architectures="$arch" \
		--format=tar --skip=output/dev --include="$(printf '%s\n' "$GPULET_IMAGE_KEEP" | paste -sd,)" \
		--extract-hook="$src/deploy/image/prune.sh \"\$1\"" bookworm "$base.part" "$sources" >&2 || {
		rm -f "$base.part"
		echo "base.sh: mmdebstrap failed: is the Debian archive ($mirror) reachable?" >&2
		exit 3
	}
	mv "$base.part" "$base"
	# older bases (another package set) are no longer used
	find "$out" -maxdepth 1 -name "$arch-base-*.tar" ! -name "$arch-base-$key.tar" -delete
fi
echo "$base"
