# k0s: kubelet lives in /var/lib/k0s/kubelet, the plugin DaemonSet mounted /var/lib/kubelet (docs/reference/field-guide.md §4.1 step 2)
mkdir -p "$ROOT/var/lib/k0s/kubelet/device-plugins"
mv "$ROOT/var/lib/kubelet/device-plugins/kubelet.sock" "$ROOT/var/lib/k0s/kubelet/device-plugins/"
