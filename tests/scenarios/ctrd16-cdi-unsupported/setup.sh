# Ubuntu 22.04's containerd 1.6: enable_cdi = true is in the config (nvidia-ctk wrote it), but CDI came
# in containerd 1.7.0, so 1.6 ignores the key and never resolves the CDI names the plugin hands out.
sed -i 's/^Version: 1.7.24~ds1-1/Version: 1.6.24~ds1-1/' "$ROOT/var/lib/dpkg/status"
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" cdi k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
