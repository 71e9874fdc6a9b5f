printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri"\n  enable_cdi = true\n' > "$ROOT/etc/containerd/config.toml"
