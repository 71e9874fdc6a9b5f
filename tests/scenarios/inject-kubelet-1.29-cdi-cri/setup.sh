# Healthy: cdi-cri with CDI on and kubelet v1.29.2, where CDI devices from device plugins are on by
# default (beta): no kubelet finding, and the injection verdict names the version it judged.
mkdir -p "$ROOT/var/run/cdi"
sed 's#"kind": "nvidia.com/gpu"#"kind": "k8s.device-plugin.nvidia.com/gpu"#' "$ROOT/etc/cdi/nvidia.json" > "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
rm "$ROOT/etc/cdi/nvidia.json"
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" cdi k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
