#!/bin/sh
# sysroot.sh ARCH [CACHE]: a Debian 12 root holding the -dev packages gpulet builds against, for ARCH
# (arm64), to cross-build with Debian's cross toolchain (gcc-aarch64-linux-gnu; cmake/cross/aarch64.cmake).
# mmdebstrap --variant=extract unpacks the packages and their dependencies for ARCH with its own apt
# configuration: nothing runs as ARCH, the host's /etc/apt and dpkg architectures are not touched. The
# root is cached in CACHE (default $GPULET_CROSS_CACHE or ~/.cache/gpulet-cross) as ARCH-KEY, KEY from
# the package list, the mirror and this script, so a later run finds it at once. Prints its path.
# Env: DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR (as deploy/image/build.sh).
set -eu
arch=${1:?usage: sysroot.sh ARCH [CACHE]}
cache=${2:-${GPULET_CROSS_CACHE:-$HOME/.cache/gpulet-cross}}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
# the libraries of .ci/demo-packages.txt for ARCH, and libc-bin for ldconfig (the image's ld.so.cache)
packages="libc6-dev libc-bin libjansson-dev libyaml-dev libgrpc-dev libprotobuf-c-dev libmicrohttpd-dev libgnutls28-dev
libcrypt-dev libcmocka-dev libcurl4-openssl-dev"
sources="deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main"
key=$( (printf '%s\n' "$arch" $packages "$sources"; cat "$0") | sha256sum | cut -c1-16)
root=$cache/$arch-$key
if [ ! -f "$root/.done" ]; then
	command -v mmdebstrap >/dev/null || { echo "sysroot.sh: mmdebstrap is missing (make deps installs it)" >&2; exit 1; }
	mkdir -p "$cache"
	exec 9>"$cache/.lock"
	flock 9 # two builds making the same root: one makes it, the other waits and finds it
	if [ ! -f "$root/.done" ]; then
		rm -rf "$root" "$root.part"
		echo "sysroot: mmdebstrap of the $arch -dev packages from $mirror into $root" >&2
		mmdebstrap --quiet --variant=extract --mode=root --architectures="$arch" --skip=output/dev \
			--include="$(printf '%s\n' $packages | paste -sd,)" bookworm "$root.part" "$sources" >&2 || {
			rm -rf "$root.part"
			echo "sysroot.sh: mmdebstrap failed: is the Debian archive ($mirror) reachable?" >&2
			exit 3
		}
		touch "$root.part/.done"
		mv "$root.part" "$root"
		# roots of an older package list are no longer used
		find "$cache" -maxdepth 1 -name "$arch-*" ! -name "$arch-$key" -exec rm -rf {} +
	fi
fi
echo "$root"
