rm -f "$ROOT/dev/nvidia-uvm" "$ROOT/dev/nvidia3"
