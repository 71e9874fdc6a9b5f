# Healthy but unusual: the RuntimeClass is called "gpu" but its handler is "nvidia" (kubelet passes
# the handler, not the class name, to the CRI). Volume-mounts strategy: Allocate returns
# NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices plus one /dev/null mount per GPU, read by
# the nvidia runtime's hook. Every GPU pod runs under the nvidia handler: nothing to report.
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" env NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices mount /var/run/nvidia-container-devices/GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
