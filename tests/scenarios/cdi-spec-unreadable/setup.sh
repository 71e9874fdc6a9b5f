chmod 0000 "$ROOT/etc/cdi/nvidia.json"
