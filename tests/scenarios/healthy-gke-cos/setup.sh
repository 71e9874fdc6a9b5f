# Healthy but unusual: GKE on Container-Optimized OS. GKE's installer puts the driver under
# /home/kubernetes/bin/nvidia (lib64/, bin/), containerd has no nvidia runtime and no CDI, no NVIDIA
# toolkit is installed, and GKE's own device plugin (kube-system, socket nvidiaGPU-<time>.sock) mounts
# the driver into each GPU container and hands the device nodes over itself. Nothing is missing.
. "$NODE_LIB"
printf 'Package: containerd\nStatus: install ok installed\nVersion: 1.7.22-1\n\n' >"$ROOT/var/lib/dpkg/status"
mkdir -p "$ROOT/home/kubernetes/bin/nvidia/bin"
mv "$ROOT/usr/lib/x86_64-linux-gnu" "$ROOT/home/kubernetes/bin/nvidia/lib64"
mv "$ROOT"/usr/bin/nvidia-smi "$ROOT/home/kubernetes/bin/nvidia/bin/"
rm -f "$ROOT/usr/bin/nvidia-container-runtime" "$ROOT/etc/cdi/nvidia.json"
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n    runtime_type = "io.containerd.runc.v2"\n    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n      SystemdCgroup = true\n' \
	>"$ROOT/etc/containerd/config.toml"
dp=$ROOT/var/lib/kubelet/device-plugins
mv "$dp/nvidia-gpu.sock" "$dp/nvidiaGPU-1709629200.sock"
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" mount /usr/local/nvidia)|" "$dp/kubelet_internal_checkpoint"
sed -i 's|"GPU-a6c2d81e[^"]*"|"nvidia0"|g' "$dp/kubelet_internal_checkpoint"
