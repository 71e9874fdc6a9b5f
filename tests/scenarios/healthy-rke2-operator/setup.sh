# RKE2 with the GPU Operator: the toolkit DaemonSet installs nvidia-container-runtime under
# /usr/local/nvidia/toolkit (not a dpkg package), the driver container exposes the driver under
# /run/nvidia/driver, and RKE2 adds the nvidia runtime with BinaryName from /usr/local/nvidia/toolkit
# (k3s nvidia.go checks that path). The operator's CDI spec is in /var/run/cdi with hooks from the
# toolkit dir. Healthy: no toolkit package is no problem, no /usr/bin/nvidia-container-runtime either.
. "$NODE_LIB"
no_containerd
printf '' >"$ROOT/var/lib/dpkg/status"
rm -f "$ROOT/usr/bin/nvidia-container-runtime"
mkdir -p "$ROOT/usr/local/nvidia/toolkit" "$ROOT/run/nvidia/driver"
printf '#!/bin/sh\n' >"$ROOT/usr/local/nvidia/toolkit/nvidia-container-runtime"
chmod 0755 "$ROOT/usr/local/nvidia/toolkit/nvidia-container-runtime"
rancher_config rke2 3 nvidia /usr/local/nvidia/toolkit/nvidia-container-runtime
real_cdi /var/run/cdi /usr/local/nvidia/toolkit/nvidia-cdi-hook
proc 1230 containerd -c /var/lib/rancher/rke2/agent/etc/containerd/config.toml
