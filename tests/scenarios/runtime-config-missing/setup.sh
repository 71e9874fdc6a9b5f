rm -f "$ROOT/etc/containerd/config.toml"
