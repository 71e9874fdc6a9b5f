# Healthy: the device plugin runs with deviceListStrategy "envvar,cdi-cri", so Allocate returns the CDI
# name and NVIDIA_VISIBLE_DEVICES both (k8s-device-plugin internal/plugin/server.go fills every kind
# the strategy list names). containerd 1.7 has CDI off (enable_cdi unset: off before 2.0), so it drops
# the CDI name, but the GPU pod runs under runtimeClassName nvidia, whose nvidia-container-runtime
# hook injects from the env var: the GPU arrives. Neither runtime.cdi-disabled (the plugin's CDI spec
# is unused, not broken) nor inject.* is a problem here (docs/reference/cluster-events.md §1).
sed -i '/enable_cdi/d' "$ROOT/etc/containerd/config.toml"
mkdir -p "$ROOT/var/run/cdi"
sed 's#"kind": "nvidia.com/gpu"#"kind": "k8s.device-plugin.nvidia.com/gpu"#' "$ROOT/etc/cdi/nvidia.json" > "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
rm "$ROOT/etc/cdi/nvidia.json"
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" env NVIDIA_VISIBLE_DEVICES=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60 cdi k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
