#!/bin/sh
# build.sh [BUILD]: the gpulet OCI image from Debian 12 packages only (`make image`).
#  1. the runtime packages: ldd's closure of BUILD/gpulet mapped to Debian packages
#     (runtime-packages.sh; 22 packages for gpulet 0.1.0, most of them gRPC's);
#  2. a minimal root of exactly those packages from the Debian archive with mmdebstrap
#     (--variant=extract: no shell, no apt, no dpkg; prune.sh drops the dependencies gpulet never
#     loads and the docs), cached in BUILD/image/base-KEY.tar, KEY from the package list, mirrors
#     and the scripts, so a rerun with the same libraries does not touch the network;
#  3. gpulet and its command-name links installed into it (`cmake --install --prefix /usr --strip`,
#     cmake/install.cmake), an ld.so.cache made with `ldconfig -r`;
#  4. `podman import` as $IMAGE:VERSION (VERSION: CMakeLists.txt GPULET_VERSION), also tagged
#     gpulet:VERSION; prints the image size.
# Env: IMAGE (default ghcr.io/gpulet/gpulet), DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
image=${IMAGE:-ghcr.io/gpulet/gpulet}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
version=$(sed -n 's/^set(GPULET_VERSION "\(.*\)")$/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || { echo "build.sh: no GPULET_VERSION in CMakeLists.txt" >&2; exit 1; }
for tool in mmdebstrap podman; do
	command -v $tool >/dev/null || { echo "build.sh: $tool is missing (make deps installs it)" >&2; exit 1; }
done

out=$build/image
mkdir -p "$out"
# gpulet and the serving modules it loads on demand (docs/HACKING.md "Lean start-up")
bins="$build/gpulet $build/gpulet-grpc.so $build/gpulet-http.so"
keep=$("$src/deploy/image/runtime-packages.sh" $bins)
libs=$(for b in $bins; do ldd "$b"; done | awk '$2 == "=>" {print $1} $1 ~ /^\// {print $1}' | sed 's|.*/||' | sort -u)
sources="deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main"
key=$( (printf '%s\n' "$keep" "$libs" "$sources"; cat "$src/deploy/image/prune.sh") | sha256sum | cut -c1-16)
base=$out/base-$key.tar
if [ ! -s "$base" ]; then
	echo "image: mmdebstrap of $(printf '%s\n' "$keep" | wc -l) packages from $mirror (cached as $base)"
	GPULET_IMAGE_KEEP=$keep GPULET_IMAGE_LIBS=$libs mmdebstrap --quiet --variant=extract --mode=root --format=tar --skip=output/dev \
		--include="$(printf '%s\n' "$keep" | paste -sd,)" \
		--extract-hook="$src/deploy/image/prune.sh \"\$1\"" \
		bookworm "$base.part" "$sources" || {
		rm -f "$base.part"
		echo "build.sh: mmdebstrap failed: is the Debian archive ($mirror) reachable?" >&2
		exit 3
	}
	mv "$base.part" "$base"
	# older bases (another package set) are no longer used
	find "$out" -maxdepth 1 -name 'base-*.tar' ! -name "base-$key.tar" -delete
fi

root=$out/root
rm -rf "$root"
mkdir -p "$root"
tar -C "$root" -xf "$base"
DESTDIR=$root cmake --install "$build" --prefix /usr --strip >/dev/null
# (/sbin/ldconfig of the build machine: the image has no programs but gpulet)
/sbin/ldconfig -r "$root"
# the image's own files: nothing gpulet writes lives here (the root filesystem is read-only in the
# chart); /host and /tmp are mount points
mkdir -p "$root/host" "$root/tmp" "$root/etc"
chmod 1777 "$root/tmp"
printf 'root:x:0:0:root:/:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
"$root/lib64/ld-linux-x86-64.so.2" --library-path "$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu" \
	"$root/usr/bin/gpulet" --help >/dev/null ||
	{ echo "build.sh: gpulet does not start from the image root" >&2; exit 1; }
# the CDI hook is static: it runs with no loader and no library at all
"$root/usr/bin/gpulet-cdi-hook" --help >/dev/null && ! ldd "$root/usr/bin/gpulet-cdi-hook" >/dev/null 2>&1 ||
	{ echo "build.sh: /usr/bin/gpulet-cdi-hook is missing or not static" >&2; exit 1; }

# a fixed mtime makes the tar a function of its contents: the same gpulet and base give the same
# digest, and a rerun that would import an identical image keeps the one there
tar --sort=name --numeric-owner --mtime=@0 -C "$root" -cf "$out/rootfs.tar" .
digest=$(sha256sum "$out/rootfs.tar" | cut -c1-64)
old=$(podman image inspect --format '{{index .Labels "io.gpulet.rootfs"}} {{.Id}}' "$image:$version" 2>/dev/null || true)
if [ "${old%% *}" != "$digest" ]; then
	podman import --quiet \
		--change 'ENTRYPOINT ["/usr/bin/gpulet"]' \
		--change 'CMD ["--help"]' \
		--change 'ENV PATH=/usr/bin' \
		--change "LABEL org.opencontainers.image.version=$version" \
		--change 'LABEL org.opencontainers.image.title=gpulet' \
		--change "LABEL org.opencontainers.image.description=gpulet: device plugin, CDI, doctor, exporter and GFD labels for NVIDIA GPU nodes; Debian 12 packages only" \
		--change "LABEL io.gpulet.rootfs=$digest" \
		"$out/rootfs.tar" "$image:$version" >/dev/null
	# the image this one replaces, once untagged
	[ -z "$old" ] || podman rmi --force "${old#* }" >/dev/null 2>&1 || true
fi
podman tag "$image:$version" "gpulet:$version"
rm -rf "$root" "$out/rootfs.tar"
size=$(podman image inspect --format '{{.Size}}' "$image:$version")
printf '%s\n' "$image:$version" >"$out/tag"
echo "image: $image:$version (also gpulet:$version), $(( size / 1024 / 1024 )) MiB ($size bytes), packages: $(printf '%s\n' "$keep" | paste -sd' ')"
