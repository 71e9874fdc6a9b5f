chmod 0660 "$ROOT"/dev/nvidia0 "$ROOT"/dev/nvidiactl "$ROOT"/dev/nvidia-uvm
