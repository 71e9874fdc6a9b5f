# the runtime is there, but under another name than the RuntimeClass handler (docs/reference/field-guide.md §3.3)
sed -i 's/runtimes\.nvidia/runtimes.nvidia-gpu/' "$ROOT/etc/containerd/config.toml"
