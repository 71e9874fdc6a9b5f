sed -i "s/enable_cdi = true/enable_cdi = false/" "$ROOT/etc/containerd/config.toml"
rm -rf "$ROOT/etc/cdi"
