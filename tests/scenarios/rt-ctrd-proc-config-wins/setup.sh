# Two configs on disk: /etc/containerd/config.toml is fine, but the running containerd was started with
# -c /etc/containerd/config-gpu.toml (a unit override) that lacks the nvidia runtime and has CDI off.
# What counts is the file the live process reads (containerd's -c flag).
. "$NODE_LIB"
rm -f "$ROOT/etc/cdi/nvidia.json"
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n' \
	>"$ROOT/etc/containerd/config-gpu.toml"
proc 455 /usr/bin/containerd -c /etc/containerd/config-gpu.toml
