#!/bin/sh
# Packs build/gpulet, its serving modules, gpulet-probe, curl and every shared library they name
# (with this machine's dynamic loader) into DIR, so run.sh can run them on a GPU machine of any
# distribution: the binaries need glibc 2.36, older hosts lack it.
#   tests/realgpu/bundle.sh BUILD_DIR DIR      then copy DIR to the GPU machine and run DIR/run.sh
set -eu
build=$1 dir=$2
mkdir -p "$dir"
cp "$build/gpulet" "$build/gpulet-probe" "$build/gpulet-grpc.so" "$build/gpulet-http.so" /usr/bin/curl "$dir/"
ldd "$dir"/gpulet "$dir"/gpulet-probe "$dir"/*.so "$dir"/curl | awk '$3 ~ /^\// {print $3}' | sort -u |
	while read -r lib; do cp -L "$lib" "$dir/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$dir/"
cp "$(dirname "$0")/run.sh" "$(dirname "$0")/all-fields.csv" "$dir/"
du -sh "$dir"
