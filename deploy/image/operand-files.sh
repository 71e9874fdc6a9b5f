#!/bin/sh
# operand-files.sh ROOT: what manifests written for NVIDIA's images expect in the image besides
# gpulet's command-name links (docs/reference/operator.md §2); deploy/image/build.sh runs it.
#  - /bin/sh and /bin/bash are links to gpulet, which under these names answers only
#    `-c /bin/entrypoint.sh` (the GPU Operator's device-plugin container) and refuses everything
#    else: the image still has no shell;
#  - /etc/dcgm-exporter/default-counters.csv and dcp-metrics-included.csv, the collectors files the
#    GPU Operator (DCGM_EXPORTER_COLLECTORS) and NVIDIA's dcgm-exporter chart (-f) name: the same
#    fields as dcgm-exporter's two files (dcgm-exporter.csv, help texts ours).
# /bin/entrypoint.sh must not exist: the Operator mounts its script there, and the runtime would
# follow a link of that name and mount the script over gpulet.
set -eu
root=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$root/bin" "$root/etc/dcgm-exporter"
for name in sh bash; do
	ln -sfn ../usr/bin/gpulet "$root/bin/$name"
done
for f in default-counters.csv dcp-metrics-included.csv; do
	install -m 0644 "$here/dcgm-exporter.csv" "$root/etc/dcgm-exporter/$f"
done
[ ! -e "$root/bin/entrypoint.sh" ] && [ ! -L "$root/bin/entrypoint.sh" ] ||
	{ echo "operand-files.sh: /bin/entrypoint.sh must not be in the image" >&2; exit 1; }
