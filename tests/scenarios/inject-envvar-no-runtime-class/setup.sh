# The plugin answers Allocate with NVIDIA_VISIBLE_DEVICES=<uuid> (the default envvar strategy; the
# checkpoint's AllocResp holds only that env). Only nvidia-container-runtime's hook acts on the
# variable; runc ignores it. containerd has CDI on, so runtime.default-is-runc stays quiet, yet the
# pod has no runtimeClassName and the default runtime is runc: it starts without a GPU. The broken
# link is the pod's runtime class.
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" env NVIDIA_VISIBLE_DEVICES=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
