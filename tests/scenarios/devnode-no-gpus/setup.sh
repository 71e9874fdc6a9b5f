# the GPU is bound to vfio-pci or excluded: the driver lists none
rm -rf "$ROOT"/proc/driver/nvidia/gpus/*
