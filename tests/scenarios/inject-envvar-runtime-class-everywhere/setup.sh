# Healthy but unusual: the classic envvar node. Allocate returns NVIDIA_VISIBLE_DEVICES=<uuid>, the
# default runtime is runc, and every GPU pod sets runtimeClassName nvidia, whose handler is the
# nvidia runtime (nvidia-container-runtime, its hook injects the listed GPUs). No failure and no
# warning: runc as the default is fine when each GPU pod picks the nvidia class.
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" env NVIDIA_VISIBLE_DEVICES=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
