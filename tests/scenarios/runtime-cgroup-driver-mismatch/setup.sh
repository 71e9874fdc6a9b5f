# a hand-written nvidia runtime without SystemdCgroup on a kubelet with cgroupDriver: systemd
sed -i '/runtimes.nvidia.options/,$ s/SystemdCgroup = true/SystemdCgroup = false/' "$ROOT/etc/containerd/config.toml"
