# The same mixed plugin (envvar,cdi-cri) and containerd 1.7 with CDI off, but the GPU pod has no
# runtimeClassName and the default runtime is runc: the CDI name is dropped (CDI off) and runc ignores
# the env var, so neither path injects. With both kinds returned, the link that would make this pod
# work as the node is set up is its runtime class; CDI off alone is not named as the cause.
sed -i '/enable_cdi/d' "$ROOT/etc/containerd/config.toml"
mkdir -p "$ROOT/var/run/cdi"
sed 's#"kind": "nvidia.com/gpu"#"kind": "k8s.device-plugin.nvidia.com/gpu"#' "$ROOT/etc/cdi/nvidia.json" > "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
rm "$ROOT/etc/cdi/nvidia.json"
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" env NVIDIA_VISIBLE_DEVICES=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60 cdi k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
