# plugin injects through CDI while nvidia-container-runtime (default runtime) still runs the legacy hook
sed -i 's/default_runtime_name = "runc"/default_runtime_name = "nvidia"/' "$ROOT/etc/containerd/config.toml"
mkdir -p "$ROOT/var/run/cdi" "$ROOT/etc/nvidia-container-runtime"
mv "$ROOT/etc/cdi/nvidia.json" "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
sed -i 's#"kind": "nvidia.com/gpu"#"kind": "k8s.device-plugin.nvidia.com/gpu"#' "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
printf '[nvidia-container-runtime]\nmode = "legacy"\nruntimes = ["runc"]\n' > "$ROOT/etc/nvidia-container-runtime/config.toml"
