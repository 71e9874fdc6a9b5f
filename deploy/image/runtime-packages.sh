#!/bin/sh
# runtime-packages.sh BINARY: the Debian packages that hold the shared libraries BINARY loads at
# start (ldd's whole closure, mapped to packages with dpkg -S), one per line, sorted. The image
# holds exactly these (deploy/image/build.sh). Libraries gpulet dlopens at run time come from the
# node, not the image: libnvidia-ml.so.1 (driver root) and libcuda.so.1 (probe).
set -eu
bin=$1
[ -x "$bin" ] || { echo "runtime-packages.sh: $bin is not an executable (build gpulet first)" >&2; exit 1; }
ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u | while read -r lib; do
	# dpkg records the path a package ships (/lib/... or /usr/lib/... on merged-/usr systems): ask
	# for the path ldd printed, then its other spelling
	alt=$(printf '%s' "$lib" | sed 's|^/usr/lib/|/lib/|; t; s|^/lib/|/usr/lib/|; t; s|^/lib64/|/usr/lib64/|')
	pkg=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$alt" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null) || {
		echo "runtime-packages.sh: no Debian package holds $lib (gpulet must link only Debian 12 libraries)" >&2
		exit 1
	}
	printf '%s\n' "$pkg" | head -n1 | cut -d: -f1
done | sed 's/,.*//' | sort -u
