#!/bin/sh
# runtime-packages.sh [--libs] BINARY...: the Debian packages that hold the shared libraries the BINARYs
# (gpulet and its serving modules) load (ldd's whole closure, mapped to packages with dpkg -S), one per
# line, sorted; with --libs, those libraries' paths instead. The image holds exactly these
# (deploy/image/build.sh). Libraries gpulet dlopens itself from the image are listed by soname in
# dlopen-libs.txt next to the BINARYs (the build writes it: libcurl.so.4 for src/kapi) and counted
# with their own closure. Libraries gpulet dlopens from the node are not the image's:
# libnvidia-ml.so.1 (driver root) and libcuda.so.1 (probe).
set -eu
print_libs=no
if [ "${1:-}" = --libs ]; then
	print_libs=yes
	shift
fi
for bin in "$@"; do
	[ -f "$bin" ] || { echo "runtime-packages.sh: $bin is missing (build gpulet first)" >&2; exit 1; }
done
dlopened=$(for bin in "$@"; do
	list=$(dirname "$bin")/dlopen-libs.txt
	[ ! -f "$list" ] || cat "$list"
done | sort -u | while read -r so; do
	path=$(/sbin/ldconfig -p | awk -v so="$so" '$1 == so && /x86-64/ {print $NF; exit}')
	[ -n "$path" ] || { echo "runtime-packages.sh: $so (dlopen-libs.txt) is not installed here" >&2; exit 1; }
	echo "$path"
done)
libs=$( (for bin in "$@" $dlopened; do ldd "$bin"; done |
	awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'; printf '%s\n' $dlopened) | sort -u)
if [ $print_libs = yes ]; then
	printf '%s\n' "$libs"
	exit 0
fi
# dpkg records the path a package ships (/lib/... or /usr/lib/... on merged-/usr systems): ask for
# every spelling of every library in one dpkg -S (each call reads the whole database)
spellings() {
	for lib in $libs; do
		printf '%s\n' "$lib" "$(readlink -f "$lib")"
		printf '%s\n' "$lib" | sed -n 's|^/usr/lib/|/lib/|p; s|^/lib/|/usr/lib/|p; s|^/lib64/|/usr/lib64/|p'
	done | sort -u
}
owners=$(dpkg -S $(spellings) 2>/dev/null || true)
for lib in $libs; do
	real=$(readlink -f "$lib")
	found=no
	for p in "$lib" "$real" "/usr$lib" "${lib#/usr}"; do
		if printf '%s\n' "$owners" | grep -q ": $p\$"; then found=yes; fi
	done
	[ $found = yes ] || {
		echo "runtime-packages.sh: no Debian package holds $lib (gpulet must link only Debian 12 libraries)" >&2
		exit 1
	}
done
printf '%s\n' "$owners" | sed 's/: .*//; s/:[a-z0-9]*$//' | tr ',' '\n' | sed 's/^ *//' | sort -u
