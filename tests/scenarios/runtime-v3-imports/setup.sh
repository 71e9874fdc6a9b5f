# containerd 2.x layout: version 3, CDI on by default, the nvidia runtime only in nvidia-ctk's drop-in
cat > "$ROOT/etc/containerd/config.toml" <<'T'
version = 3
imports = ["/etc/containerd/conf.d/*.toml"]
[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = 'runc'
T
mkdir -p "$ROOT/etc/containerd/conf.d"
cat > "$ROOT/etc/containerd/conf.d/99-nvidia.toml" <<'T'
version = 3
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
    SystemdCgroup = true
T
