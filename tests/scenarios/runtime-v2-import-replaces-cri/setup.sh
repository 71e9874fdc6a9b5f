# containerd 1.x replaces a whole plugin table per import: a drop-in that only sets the snapshotter
# wipes the nvidia runtime of the main file (containerd #5837)
sed -i '2i imports = ["/etc/containerd/conf.d/*.toml"]' "$ROOT/etc/containerd/config.toml"
mkdir -p "$ROOT/etc/containerd/conf.d"
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  snapshotter = "overlayfs"\n' > "$ROOT/etc/containerd/conf.d/10-snapshotter.toml"
