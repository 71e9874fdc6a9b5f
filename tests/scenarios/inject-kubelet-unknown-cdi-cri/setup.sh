# Healthy: cdi-cri with CDI on, and nothing says the kubelet's version (no nodeInfo in --node, no kubelet
# package, not a live host). The doctor must not guess: no kubelet warning, and the injection verdict
# says the version is unknown and what cdi-cri needs.
mkdir -p "$ROOT/var/run/cdi"
sed 's#"kind": "nvidia.com/gpu"#"kind": "k8s.device-plugin.nvidia.com/gpu"#' "$ROOT/etc/cdi/nvidia.json" > "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
rm "$ROOT/etc/cdi/nvidia.json"
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" cdi k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
