rm -rf "$ROOT/proc/driver/nvidia" "$ROOT/sys/module/nvidia"
