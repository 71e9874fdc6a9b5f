rm -f "$ROOT/usr/bin/nvidia-container-runtime"
