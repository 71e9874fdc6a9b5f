# RKE2 1.28 (containerd 1.7) with a user template config.toml.tmpl whose hand-written nvidia runtime
# lacks SystemdCgroup = true while kubelet uses the systemd cgroup driver: the runtime's pods fail to
# start. The fix goes into the template RKE2 renders from (config.toml.tmpl), then rke2 restarts.
. "$NODE_LIB"
no_containerd
rancher_config rke2 2 nvidia
d="$ROOT/var/lib/rancher/rke2/agent/etc/containerd"
sed -i 's/^  SystemdCgroup = true$/  SystemdCgroup = false/' "$d/config.toml"
sed -i '0,/SystemdCgroup = false/s//SystemdCgroup = true/' "$d/config.toml"
printf '{{ template "base" . }}\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n  BinaryName = "/usr/bin/nvidia-container-runtime"\n' >"$d/config.toml.tmpl"
grep -c 'SystemdCgroup = false' "$d/config.toml" | grep -qx 1
proc 1230 containerd -c /var/lib/rancher/rke2/agent/etc/containerd/config.toml
