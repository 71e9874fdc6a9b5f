# containerd 1.7 default: enable_cdi unset means off; the device plugin runs with CDI and wrote its spec
sed -i '/enable_cdi/d; /cdi_spec_dirs/d' "$ROOT/etc/containerd/config.toml"
mkdir -p "$ROOT/var/run/cdi"
mv "$ROOT/etc/cdi/nvidia.json" "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
sed -i 's#"kind": "nvidia.com/gpu"#"kind": "k8s.device-plugin.nvidia.com/gpu"#' "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
