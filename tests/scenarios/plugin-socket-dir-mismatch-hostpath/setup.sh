# the reverse: kubelet runs with --root-dir=/data/kubelet but, like every released kubelet, serves
# device plugins at the fixed /var/lib/kubelet/device-plugins; the DaemonSet's hostPath was moved to
# /data/kubelet/device-plugins along with the root dir
mkdir -p "$ROOT/data/kubelet/device-plugins"
mv "$ROOT"/var/lib/kubelet/device-plugins/nvidia-*.sock "$ROOT/data/kubelet/device-plugins/"
