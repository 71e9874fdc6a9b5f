# Healthy: no /dev/char links, but nothing runs containers under the systemd cgroup driver (kubelet's
# cgroupDriver cgroupfs, runc without SystemdCgroup): a daemon-reload does not touch their devices.
. "$NODE_LIB"
real_cdi
rm -rf "$ROOT/dev/char"
sed -i 's/cgroupDriver: systemd/cgroupDriver: cgroupfs/' "$ROOT/var/lib/kubelet/config.yaml"
sed -i 's/SystemdCgroup = true/SystemdCgroup = false/' "$ROOT/etc/containerd/config.toml"
