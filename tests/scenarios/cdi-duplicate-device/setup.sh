cp "$ROOT/etc/cdi/nvidia.json" "$ROOT/etc/cdi/nvidia-old.json"
