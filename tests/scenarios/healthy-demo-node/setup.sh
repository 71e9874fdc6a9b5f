# The node `make demo` builds (tests/demo.py): containerd with CDI on and an nvidia runtime, the plugin's
# own spec in /var/run/cdi (kind k8s.device-plugin.nvidia.com/gpu, names by UUID) naming the hook where
# gpulet's chart installs it, /usr/bin/nvidia-cdi-hook, which exists. A healthy node: no failure, no
# warning (the demo once reported its missing hook as "driver upgrade, GPU gone").
. "$NODE_LIB"
printf '#!/bin/sh\nexit 0\n' >"$ROOT/usr/bin/nvidia-cdi-hook" && chmod 0755 "$ROOT/usr/bin/nvidia-cdi-hook"
plugin_spec /usr/bin/nvidia-cdi-hook
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" env NVIDIA_VISIBLE_DEVICES=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60 cdi k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
