#!/bin/sh
# build.sh [BUILD]: the gpulet OCI image from Debian 12 packages only (`make image`).
#  1. the runtime packages: ldd's closure of BUILD/gpulet mapped to Debian packages
#     (runtime-packages.sh; 22 packages for gpulet 0.1.0, most of them gRPC's), plus base-files for
#     /etc/os-release and /etc/debian_version, which scanners (Trivy, Grype) read to know the OS;
#  2. a minimal root of exactly those packages from the Debian archive (base.sh: mmdebstrap
#     --variant=extract: no shell, no apt, no dpkg; prune.sh drops the dependencies gpulet never
#     loads and the docs, and writes the dpkg status entries of exactly the packages kept), cached in
#     BUILD/image/amd64-base-KEY.tar, KEY from the package list, mirrors and prune.sh, so a rerun with
#     the same libraries does not touch the network;
#  3. gpulet and its command-name links installed into it (`cmake --install --prefix /usr --strip`,
#     cmake/install.cmake), what NVIDIA's manifests expect besides (operand-files.sh: /bin/sh and
#     /bin/bash as gpulet, the dcgm-exporter collectors files), an ld.so.cache made with `ldconfig -r`;
#  4. no build-host leftovers (apt and dpkg state but the status file, /etc/hostname, resolv.conf,
#     fstab, lock files, ldconfig's aux-cache, libstdc++'s gdb helper scripts);
#  5. the same for arm64 (arm64.sh: the same packages for arm64, gpulet cross-built), unless
#     GPULET_IMAGE_ARCHS=amd64;
#  6. a reproducible OCI image index of both (oci.py): every mtime SOURCE_DATE_EPOCH, the tar sorted with numeric
#     owners, the config's created time from SOURCE_DATE_EPOCH too, so the same base, gpulet and
#     commit give the same digest (BUILD/image/digest: manifest and config digests); OCI labels
#     version, source, revision, created, licenses; the host's image loaded with `podman pull oci:` as
#     $IMAGE:VERSION (VERSION: CMakeLists.txt GPULET_VERSION), also tagged gpulet:VERSION; prints
#     the image size; the layout with the index stays in BUILD/image/oci.
# Env: IMAGE (default ghcr.io/gpulet/gpulet), DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR,
# SOURCE_DATE_EPOCH (default: the commit time of HEAD, else 0).
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
image=${IMAGE:-ghcr.io/gpulet/gpulet}
version=$(sed -n 's/^set(GPULET_VERSION "\(.*\)")$/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || { echo "build.sh: no GPULET_VERSION in CMakeLists.txt" >&2; exit 1; }
for tool in mmdebstrap podman python3; do
	command -v $tool >/dev/null || { echo "build.sh: $tool is missing (make deps installs it)" >&2; exit 1; }
done

out=$build/image
mkdir -p "$out"
# gpulet and the serving modules it loads on demand (docs/HACKING.md "Lean start-up")
bins="$build/gpulet $build/gpulet-grpc.so $build/gpulet-http.so"
keep=$( ("$src/deploy/image/runtime-packages.sh" $bins; echo base-files) | sort -u)
libs=$("$src/deploy/image/runtime-packages.sh" --libs $bins | sed 's|.*/||' | sort -u)
export GPULET_IMAGE_KEEP="$keep" GPULET_IMAGE_LIBS="$libs"
base=$(sh "$src/deploy/image/base.sh" amd64 "$out")
# older bases of the layout before base.sh
find "$out" -maxdepth 1 -name 'base-*.tar' -delete

root=$out/root
rm -rf "$root"
mkdir -p "$root"
tar -C "$root" -xf "$base"
# what mmdebstrap and apt leave, base-files' empty dirs; the mount points, passwd and group
sh "$src/deploy/image/finish-root.sh" "$root"
DESTDIR=$root cmake --install "$build" --prefix /usr --strip >/dev/null
# /bin/sh, /bin/bash (gpulet, not a shell) and the dcgm-exporter collectors files NVIDIA's manifests name
"$src/deploy/image/operand-files.sh" "$root"
# (/sbin/ldconfig of the build machine: the image has no programs but gpulet); its aux-cache holds
# the build's inode numbers and times: not shipped
/sbin/ldconfig -r "$root"
rm -rf "$root/var/cache"
"$root/lib64/ld-linux-x86-64.so.2" --library-path "$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu" \
	"$root/usr/bin/gpulet" --help >/dev/null ||
	{ echo "build.sh: gpulet does not start from the image root" >&2; exit 1; }
# the CDI hook is static: it runs with no loader and no library at all
"$root/usr/bin/gpulet-cdi-hook" --help >/dev/null && ! ldd "$root/usr/bin/gpulet-cdi-hook" >/dev/null 2>&1 ||
	{ echo "build.sh: /usr/bin/gpulet-cdi-hook is missing or not static" >&2; exit 1; }

# Reproducible: every mtime is SOURCE_DATE_EPOCH and the tar is sorted with numeric owners, so the
# layer is a function of the files; oci.py writes config and manifest deterministically.
sde=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$sde" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
[ "$revision" = unknown ] || [ -z "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ] ||
	revision=$revision-dirty
tar --sort=name --format=gnu --numeric-owner --owner=0 --group=0 --mtime="@$sde" -C "$root" -cf "$out/rootfs.tar" .
# the arm64 image of the index (deploy/image/arm64.sh; GPULET_IMAGE_ARCHS=amd64 leaves it out)
rootfs="amd64=$out/rootfs.tar"
case " ${GPULET_IMAGE_ARCHS:-amd64 arm64} " in *" arm64 "*)
	sh "$src/deploy/image/arm64.sh" "$build" "$out" "$sde"
	rootfs="$rootfs,arm64=$out/rootfs-arm64.tar" ;;
esac
set -- $(python3 "$src/deploy/image/oci.py" "$out/oci" "$rootfs" "$version" "$created" \
	"org.opencontainers.image.version=$version" \
	"org.opencontainers.image.title=gpulet" \
	"org.opencontainers.image.description=gpulet: device plugin, CDI, doctor, exporter and GFD labels for NVIDIA GPU nodes; Debian 12 packages only" \
	"org.opencontainers.image.source=https://github.com/gpulet/gpulet" \
	"org.opencontainers.image.revision=$revision" \
	"org.opencontainers.image.created=$created" \
	"org.opencontainers.image.licenses=Apache-2.0")
manifest=$1 config=$2 index=${3:-}
printf '%s\n%s\n%s\n' "$manifest" "$config" "$index" >"$out/digest"
old=$(podman image inspect --format '{{.Id}}' "$image:$version" 2>/dev/null || true)
if [ "sha256:$old" != "$config" ]; then
	podman pull --quiet "oci:$out/oci:$version" >/dev/null
	podman tag "${config#sha256:}" "$image:$version"
	# the image this one replaces, once untagged
	[ -z "$old" ] || podman rmi --force "$old" >/dev/null 2>&1 || true
fi
podman tag "$image:$version" "gpulet:$version"
# the OCI layout as one tar too (BUILD/image/oci.tar): what containerd imports (tests/k8s); the layout
# stays, the index of both architectures, for `skopeo copy --all oci:$out/oci:VERSION docker://...`
tar -C "$out/oci" --sort=name --numeric-owner --owner=0 --group=0 --mtime="@$sde" -cf "$out/oci.tar" .
rm -rf "$root" "$out/rootfs.tar" "$out/rootfs-arm64.tar"
size=$(podman image inspect --format '{{.Size}}' "$image:$version")
printf '%s\n' "$image:$version" >"$out/tag"
echo "image: $image:$version (also gpulet:$version), $(( size / 1024 / 1024 )) MiB ($size bytes), manifest $manifest, packages: $(printf '%s\n' "$keep" | paste -sd' ')"
