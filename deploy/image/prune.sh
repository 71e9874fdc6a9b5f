#!/bin/sh
# prune.sh ROOT: mmdebstrap extract hook. apt brought the packages gpulet's libraries need plus
# their declared dependencies (libgrpc29 pulls the C++ protobuf runtime gpulet never loads); keep
# only the files of the packages listed in $GPULET_IMAGE_KEEP (deploy/image/runtime-packages.sh),
# and of those only what runs: no documentation, manual pages or locales, but every copyright file.
set -eu
root=$1
: "${GPULET_IMAGE_KEEP:?the packages to keep}"
: "${GPULET_IMAGE_LIBS:?the library file names ldd lists}"
for deb in "$root"/var/cache/apt/archives/*.deb; do
	pkg=$(dpkg-deb -f "$deb" Package)
	if printf '%s\n' $GPULET_IMAGE_KEEP | grep -qx "$pkg"; then
		continue
	fi
	# regular files and links of a package gpulet does not load; directories stay (shared)
	dpkg-deb --fsys-tarfile "$deb" | tar -t | grep -v '/$' | while read -r f; do
		rm -f "$root/${f#./}"
	done
done
for dir in "$root/lib/x86_64-linux-gnu" "$root/usr/lib/x86_64-linux-gnu"; do
	[ -d "$dir" ] || continue
	find "$dir" -maxdepth 1 -name 'lib*.so*' ! -type d | while read -r f; do
		name=${f##*/}
		used=no
		for lib in $GPULET_IMAGE_LIBS; do
			case $name in "$lib"*) used=yes ;; esac
		done
		[ $used = yes ] || rm -f "$f"
	done
done
rm -rf "$root/usr/lib/x86_64-linux-gnu/gconv" "$root/usr/bin" "$root/usr/sbin" "$root/sbin" "$root/bin"
find "$root/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete
rm -rf "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/locale" "$root/usr/share/lintian"
find "$root/usr/share" -depth -type d -empty -delete
