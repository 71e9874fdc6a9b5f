# kubelet's config file is not at /var/lib/kubelet/config.yaml (a distribution's own path) and no --pods
# was given, but kubelet serves device plugins here and the plugin registered: the runtime is judged.
# The plugin hands out NVIDIA_VISIBLE_DEVICES, containerd has no nvidia runtime: nothing injects.
rm -f "$ROOT/var/lib/kubelet/config.yaml"
sed -i 's/runtimes\.nvidia/runtimes.nvidia-old/' "$ROOT/etc/containerd/config.toml"
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" env NVIDIA_VISIBLE_DEVICES=GPU-a6c2d81e-5f3b-4c2a-8e1d-9b7f6a5c4d3e)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
