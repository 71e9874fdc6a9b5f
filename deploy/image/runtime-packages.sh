#!/bin/sh
# runtime-packages.sh BINARY...: the Debian packages that hold the shared libraries the BINARYs (gpulet
# and its serving modules) load (ldd's whole closure, mapped to packages with dpkg -S), one per line, sorted. The image
# holds exactly these (deploy/image/build.sh). Libraries gpulet dlopens at run time come from the
# node, not the image: libnvidia-ml.so.1 (driver root) and libcuda.so.1 (probe).
set -eu
for bin in "$@"; do
	[ -f "$bin" ] || { echo "runtime-packages.sh: $bin is missing (build gpulet first)" >&2; exit 1; }
done
libs=$(for bin in "$@"; do ldd "$bin"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
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
