rm -f "$ROOT"/var/lib/kubelet/device-plugins/nvidia-*.sock
