# The plugin pod says deviceListStrategy cdi-cri (env DEVICE_LIST_STRATEGY) and the node's kubelet is
# v1.27.9: the device-plugin API's CDI field arrived in 1.28 (KEP-4009; docs/reference/cdi.md 5.2), so
# kubelet drops the names and no NVIDIA_VISIBLE_DEVICES comes beside them: containers start without a
# GPU. A failure, with the fix: the envvar strategy (the chart's pick below 1.29) or a newer kubelet.
mkdir -p "$ROOT/var/run/cdi"
sed 's#"kind": "nvidia.com/gpu"#"kind": "k8s.device-plugin.nvidia.com/gpu"#' "$ROOT/etc/cdi/nvidia.json" > "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
rm "$ROOT/etc/cdi/nvidia.json"
