# Healthy but unusual: the plugin runs with deviceListStrategy cdi-annotations: Allocate returns only
# the annotation cdi.k8s.io/nvidia-device-plugin_<id> naming the device. containerd 1.7 with
# enable_cdi = true reads CDI annotations from the sandbox/container config and injects from the
# plugin's spec in /var/run/cdi. The pod has no runtimeClassName, which CDI does not need.
mkdir -p "$ROOT/var/run/cdi"
sed 's#"kind": "nvidia.com/gpu"#"kind": "k8s.device-plugin.nvidia.com/gpu"#' "$ROOT/etc/cdi/nvidia.json" > "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
rm "$ROOT/etc/cdi/nvidia.json"
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" annotation cdi.k8s.io/nvidia-device-plugin_GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60=k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
