# No GPU pod names the nvidia RuntimeClass, CDI is on: but the plugin's own pod runs with
# runtimeClassName nvidia, and containerd has no such runtime: the plugin pod cannot start
# (FailedCreatePodSandBox). Something uses the handler, so its absence is a failure.
sed -i 's/runtimes\.nvidia/runtimes.nvidia-old/' "$ROOT/etc/containerd/config.toml"
