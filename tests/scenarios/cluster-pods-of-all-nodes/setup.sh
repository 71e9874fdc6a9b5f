# Healthy but unusual: --pods is the whole cluster (kubectl get pods -A -o json) and no --node is
# given. On another node (gpu-node-2) the device plugin pod is OOMKilled and a pod that requests no GPU
# sets NVIDIA_VISIBLE_DEVICES=all; this node runs nvidia as containerd's default runtime, so that pod
# would leak GPUs if it ran here. kubelet registers the node under the host name (no
# --hostname-override), so /etc/hostname (gpu-node-1) picks this node's pods by spec.nodeName: the
# other node's pods are not this node's problem, and this node's own plugin is fine.
echo gpu-node-1 > "$ROOT/etc/hostname"
sed -i 's/default_runtime_name = "runc"/default_runtime_name = "nvidia"/' "$ROOT/etc/containerd/config.toml"
