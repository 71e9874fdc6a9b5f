# Rootless containerd (containerd-rootless-setuptool.sh) run by uid 1000, --runtime-user 1000:1000:
# the driver's default NVreg_DeviceFileMode=0666 nodes are openable by that user (docs/reference/field-guide.md §4.2).
. "$NODE_LIB"
chmod 0666 "$ROOT"/dev/nvidia0 "$ROOT"/dev/nvidiactl "$ROOT"/dev/nvidia-uvm
real_cdi /etc/cdi
