# kubeadm + containerd 1.7 with the GPU Operator: the toolkit container installs the runtime into
# /usr/local/nvidia/toolkit and sets BinaryName to it in /etc/containerd/config.toml; the driver
# container's files are under /run/nvidia/driver; no toolkit package in dpkg. The operator's CDI spec
# in /var/run/cdi uses the toolkit's nvidia-cdi-hook (GPU Operator docs, "toolkit.installDir").
. "$NODE_LIB"
sed -i 's#/usr/bin/nvidia-container-runtime#/usr/local/nvidia/toolkit/nvidia-container-runtime#' "$ROOT/etc/containerd/config.toml"
printf 'Package: containerd\nStatus: install ok installed\nVersion: 1.7.24~ds1-1\n\n' >"$ROOT/var/lib/dpkg/status"
rm -f "$ROOT/usr/bin/nvidia-container-runtime"
mkdir -p "$ROOT/usr/local/nvidia/toolkit" "$ROOT/run/nvidia/driver"
printf '#!/bin/sh\n' >"$ROOT/usr/local/nvidia/toolkit/nvidia-container-runtime"
chmod 0755 "$ROOT/usr/local/nvidia/toolkit/nvidia-container-runtime"
real_cdi /var/run/cdi /usr/local/nvidia/toolkit/nvidia-cdi-hook
