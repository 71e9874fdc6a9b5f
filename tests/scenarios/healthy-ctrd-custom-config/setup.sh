# containerd started by a unit with a non-default config path (ExecStart=/usr/bin/containerd
# --config /opt/containerd/config.toml): /etc/containerd does not exist, the live process names the file
# it reads (containerd's -c/--config flag). The config has the nvidia runtime and CDI on.
. "$NODE_LIB"
mkdir -p "$ROOT/opt/containerd"
mv "$ROOT/etc/containerd/config.toml" "$ROOT/opt/containerd/config.toml"
rm -rf "$ROOT/etc/containerd"
real_cdi /etc/cdi
proc 455 /usr/bin/containerd --config=/opt/containerd/config.toml
