# The plugin runs with deviceListStrategy cdi-cri (its pod's env, and kubelet's checkpoint shows
# cdi_devices) on a node whose kubelet is v1.28.5 (--node status.nodeInfo.kubeletVersion). CDI devices
# in the device-plugin API are alpha in 1.28 behind DevicePluginCDIDevices, off by default (KEP-4009;
# docs/reference/cdi.md 5.2): unless the gate is on, kubelet does not pass the names to containerd and
# the container starts without a GPU. The doctor cannot see the gate: a warning, whose fix names the
# gate, kubelet >= 1.29 and the envvar strategy. containerd's CDI is on, so nothing else is wrong.
mkdir -p "$ROOT/var/run/cdi"
sed 's#"kind": "nvidia.com/gpu"#"kind": "k8s.device-plugin.nvidia.com/gpu"#' "$ROOT/etc/cdi/nvidia.json" > "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
rm "$ROOT/etc/cdi/nvidia.json"
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" cdi k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
