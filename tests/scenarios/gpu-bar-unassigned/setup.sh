# A VM with four passed-through A100s whose firmware gave the PCI hole too little 64-bit space: the
# kernel could not place one GPU's 64 GiB BAR1, the nvidia probe refused it (gpu-operator issue 492,
# kata-containers issue 835), and the VM shows three GPUs.
. "$NODE_LIB"
drop_gpus 3
rm -rf "$ROOT/proc/driver/nvidia/gpus/0000:e3:00.0"
printf '0x00000000f2000000 0x00000000f2ffffff 0x0000000000040200\n0x0000000000000000 0x0000000000000000 0x0000000000000000\n' \
	>"$ROOT/sys/bus/pci/devices/0000:e3:00.0/resource"
