# The GPU Operator runs (controller on the control plane), the driver is preinstalled, but NFD was never
# deployed: this node has no pci-10de label, so the operator deployed nothing here, its toolkit included,
# and containerd was never given the nvidia runtime. The runtime is not the cause: NFD is.
rm -f "$ROOT"/var/lib/kubelet/device-plugins/nvidia-*.sock
sed -i 's/runtimes\.nvidia/runtimes.unused/' "$ROOT/etc/containerd/config.toml"
