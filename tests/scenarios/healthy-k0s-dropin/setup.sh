# A k0s worker: k0s runs /var/lib/k0s/bin/containerd --root=/var/lib/k0s/containerd
# --state=/run/k0s/containerd --address=/run/k0s/containerd.sock --config=/etc/k0s/containerd.toml
# (k0s docs "Runtime"). Since 1.27.1 that file is k0s-managed ("# k0s_managed=true") and imports the
# CRI config k0s renders to /run/k0s/containerd-cri.toml, which merges the user's drop-ins from
# /etc/k0s/containerd.d/ (here the nvidia runtime). No /etc/containerd.
. "$NODE_LIB"
no_containerd
rm -f "$ROOT/etc/cdi/nvidia.json" # runtimeClass injection only: containerd 1.7 has CDI off, no spec
mkdir -p "$ROOT/etc/k0s/containerd.d" "$ROOT/run/k0s"
printf '# k0s_managed=true\nversion = 2\nimports = ["/run/k0s/containerd-cri.toml"]\n' >"$ROOT/etc/k0s/containerd.toml"
cat >"$ROOT/etc/k0s/containerd.d/nvidia.toml" <<'T'
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
    SystemdCgroup = true
T
cat >"$ROOT/run/k0s/containerd-cri.toml" <<'T'
version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
    SystemdCgroup = true
T
proc 2100 /var/lib/k0s/bin/containerd --root=/var/lib/k0s/containerd --state=/run/k0s/containerd --address=/run/k0s/containerd.sock --config=/etc/k0s/containerd.toml
