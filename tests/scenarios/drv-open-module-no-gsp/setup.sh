# A V100 (GV100, PCI 10de:1db6) node upgraded to a driver branch whose default is the open kernel
# module: the open module needs the GPU System Processor, which GPUs before Turing lack, so it refuses
# the GPU and does not load (src/nvidia/arch/nvalloc/unix/src/osapi.c; negativo17 nvidia-driver issue 158).
rm -rf "$ROOT/proc/driver/nvidia" "$ROOT/sys/module/nvidia"
echo 0x1db6 >"$ROOT/sys/bus/pci/devices/0000:00:1e.0/device"
