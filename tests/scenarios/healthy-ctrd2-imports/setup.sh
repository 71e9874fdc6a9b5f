# containerd 2.x as packaged upstream: config.toml version 3 with imports = ["/etc/containerd/conf.d/*.toml"],
# and nvidia-ctk's drop-in /etc/containerd/conf.d/99-nvidia.toml (nvidia-ctk configure.go
# defaultContainerdDropInConfigFilePath) holding the nvidia runtime under
# plugins."io.containerd.cri.v1.runtime" (containerd 2 docs/cri/config.md). CDI is on by default.
. "$NODE_LIB"
printf 'Package: containerd.io\nStatus: install ok installed\nVersion: 2.0.5-1\n\nPackage: nvidia-container-toolkit\nStatus: install ok installed\nVersion: 1.17.8-1\n\n' >"$ROOT/var/lib/dpkg/status"
mkdir -p "$ROOT/etc/containerd/conf.d"
cat >"$ROOT/etc/containerd/config.toml" <<'T'
version = 3
imports = ["/etc/containerd/conf.d/*.toml"]
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = true
T
cat >"$ROOT/etc/containerd/conf.d/99-nvidia.toml" <<'T'
version = 3
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
    SystemdCgroup = true
T
real_cdi /etc/cdi
proc 455 /usr/bin/containerd
