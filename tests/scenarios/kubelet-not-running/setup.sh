rm -f "$ROOT/var/lib/kubelet/device-plugins/kubelet.sock"
