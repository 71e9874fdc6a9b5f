# The nvidia module is loaded and has seven GPUs; nouveau, loaded from the initramfs before it, kept
# the eighth.
. "$NODE_LIB"
drop_gpus 7
rm -rf "$ROOT/proc/driver/nvidia/gpus/0000:bd:00.0"
mkdir -p "$ROOT/sys/bus/pci/drivers/nouveau"
ln -s ../../drivers/nouveau "$ROOT/sys/bus/pci/devices/0000:bd:00.0/driver"
