# The GPU Operator's driver container: the module is loaded, the user-space driver lives under
# /run/nvidia/driver (nothing in /usr/lib), the toolkit is in /usr/local/nvidia/toolkit and its spec
# points at the driver root. The doctor finds NVML there itself (no --nvml-library): healthy.
. "$NODE_LIB"
no_containerd
printf 'Package: containerd\nStatus: install ok installed\nVersion: 1.7.24~ds1-1\n\n' >"$ROOT/var/lib/dpkg/status"
mkdir -p "$ROOT/etc/containerd" "$ROOT/run/nvidia/driver/usr/lib" "$ROOT/run/nvidia/driver/usr/bin" "$ROOT/usr/local/nvidia/toolkit"
mv "$ROOT/usr/lib/x86_64-linux-gnu" "$ROOT/run/nvidia/driver/usr/lib/"
mv "$ROOT"/usr/bin/nvidia-* "$ROOT/run/nvidia/driver/usr/bin/"
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "nvidia"\n  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n    runtime_type = "io.containerd.runc.v2"\n    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n      BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"\n      SystemdCgroup = true\n' \
	>"$ROOT/etc/containerd/config.toml"
printf '#!/bin/sh\n' >"$ROOT/usr/local/nvidia/toolkit/nvidia-container-runtime"
chmod 0755 "$ROOT/usr/local/nvidia/toolkit/nvidia-container-runtime"
DRIVER_ROOT=/run/nvidia/driver DEV_ROOT=/ real_cdi /var/run/cdi /usr/local/nvidia/toolkit/nvidia-cdi-hook
