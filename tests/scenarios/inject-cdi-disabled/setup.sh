# The device plugin runs with deviceListStrategy cdi-cri: kubelet's checkpoint shows Allocate returned
# cdi_devices (k8s.device-plugin.nvidia.com/gpu=<uuid>) and no NVIDIA_VISIBLE_DEVICES
# (k8s-device-plugin internal/plugin/server.go: with only CDI strategies the response carries CDI names
# alone). containerd 1.7 with enable_cdi = false drops the CRI CDIDevices field (containerd
# WithCDI only runs when enable_cdi is set), so the container starts under runc with no GPU. runc being
# the default is right for CDI injection: the root cause is CDI off, named first, and
# runtime.default-is-runc is not reported beside it (runc with CDI on would inject these names).
sed -i 's/enable_cdi = true/enable_cdi = false/' "$ROOT/etc/containerd/config.toml"
mkdir -p "$ROOT/var/run/cdi"
sed 's#"kind": "nvidia.com/gpu"#"kind": "k8s.device-plugin.nvidia.com/gpu"#' "$ROOT/etc/cdi/nvidia.json" > "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
rm "$ROOT/etc/cdi/nvidia.json"
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" cdi k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
