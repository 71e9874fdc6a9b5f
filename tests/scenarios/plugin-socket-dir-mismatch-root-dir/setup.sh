# field guide 4.1 step 2: kubelet runs with --root-dir=/data/kubelet, the plugin DaemonSet still
# mounts /var/lib/kubelet/device-plugins, so its sockets land where kubelet does not watch
mkdir -p "$ROOT/var/lib/kubelet/device-plugins"
mv "$ROOT"/data/kubelet/device-plugins/nvidia-*.sock "$ROOT/var/lib/kubelet/device-plugins/"
