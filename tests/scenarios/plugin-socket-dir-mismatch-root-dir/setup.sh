# field guide 4.1 step 2: this kubelet (--root-dir=/data/kubelet) serves device plugins below its
# root dir; the plugin DaemonSet still mounts /var/lib/kubelet/device-plugins, so its sockets land
# where kubelet does not look
mkdir -p "$ROOT/var/lib/kubelet/device-plugins"
mv "$ROOT"/data/kubelet/device-plugins/nvidia-*.sock "$ROOT/var/lib/kubelet/device-plugins/"
