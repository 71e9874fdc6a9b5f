# Rootless containerd run by uid 1000 (--runtime-user 1000:1000) on a node whose driver creates its
# device nodes 0600 root:root (NVreg_DeviceFileMode=0600): the runtime's user cannot open them, so
# every GPU container fails whatever its own user (docs/reference/field-guide.md §4.2).
chmod 0600 "$ROOT"/dev/nvidia0 "$ROOT"/dev/nvidiactl "$ROOT"/dev/nvidia-uvm
