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
		# a kept package's doc dir may be a link to this one's (libstdc++6 -> gcc-12-base)
		case $f in ./usr/share/doc/*/copyright) continue ;; esac
		rm -f "$root/${f#./}"
	done
done
# copyright files of packages not kept stay only where a kept package's doc link leads
for dir in "$root"/usr/share/doc/*/; do
	dir=${dir%/}
	name=${dir##*/}
	[ -L "$dir" ] || printf '%s\n' $GPULET_IMAGE_KEEP | grep -qx "$name" ||
		find "$root/usr/share/doc" -maxdepth 1 -type l -lname "$name" | grep -q . || rm -rf "$dir"
done
multiarch=${GPULET_IMAGE_MULTIARCH:-x86_64-linux-gnu} # aarch64-linux-gnu for the arm64 image
for dir in "$root/lib/$multiarch" "$root/usr/lib/$multiarch"; do
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
rm -rf "$root/usr/lib/$multiarch/gconv" "$root/usr/bin" "$root/usr/sbin" "$root/sbin" "$root/bin"
# base-files is kept for the OS's identity only (os-release, debian_version); libstdc++6's gdb
# pretty-printers are build helpers
find "$root/etc" -mindepth 1 -maxdepth 1 ! -name os-release ! -name debian_version ! -name ld.so.conf.d \
	! -name apt ! -name dpkg ! -name hostname ! -name resolv.conf ! -name fstab -exec rm -rf {} +
rm -rf "$root/usr/share/gcc" "$root/usr/share/gdb" "$root/usr/share/base-files" "$root/usr/share/common-licenses"
# dpkg's status of exactly the packages kept, from their .debs (the versions shipped): scanners
# read it to find the OS packages and their CVEs. Package, Status, then the control fields.
status=$root/var/lib/dpkg/status
: >"$status"
for pkg in $(printf '%s\n' $GPULET_IMAGE_KEEP | sort -u); do
	set -- "$root"/var/cache/apt/archives/"${pkg}"_*.deb
	[ -f "$1" ] || { echo "prune.sh: no .deb for $pkg" >&2; exit 1; }
	{
		printf 'Package: %s\nStatus: install ok installed\n' "$pkg"
		dpkg-deb -f "$1" | grep -v '^Package:'
		echo
	} >>"$status"
done
find "$root/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete
rm -rf "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/locale" "$root/usr/share/lintian"
find "$root/usr/share" -depth -type d -empty -delete
