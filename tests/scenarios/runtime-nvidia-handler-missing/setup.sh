# the runtime is there, but under another name than the RuntimeClass handler (seed §3.3)
sed -i 's/runtimes\.nvidia/runtimes.nvidia-gpu/' "$ROOT/etc/containerd/config.toml"
