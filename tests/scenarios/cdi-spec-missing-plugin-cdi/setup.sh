# The device plugin hands out CDI names only (kubelet's checkpoint: Allocate returned cdi_devices and no
# NVIDIA_VISIBLE_DEVICES, as k8s-device-plugin does with deviceListStrategy cdi-cri), and no CDI spec is
# left on the node (the plugin's own was deleted). containerd resolves the names against its spec dirs
# and fails every such container with "CDI device injection failed: unresolvable CDI devices" (seen on
# the real node, docs/reference/real-peers.md §I): nothing else injects, so the missing spec is a
# failure, not the warning it is when nobody is known to ask for CDI devices.
rm -f "$ROOT/etc/cdi/nvidia.json" "$ROOT"/var/run/cdi/*
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" cdi k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
