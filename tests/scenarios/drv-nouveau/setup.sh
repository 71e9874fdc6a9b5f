# A fresh Ubuntu node: the distribution's nouveau driver bound the GPUs at boot. modprobe nvidia then
# finds no GPU to probe ("NVRM: The NVIDIA probe routine was not called for 8 device(s)" ... "No NVIDIA
# devices probed", kernel-open/nvidia/nv.c) and the module does not stay loaded. The operator checks
# the driver sysfs links and the modprobe.d blacklist: nouveau it is, not "modprobe nvidia".
rm -rf "$ROOT/proc/driver/nvidia" "$ROOT/sys/module/nvidia"
mkdir -p "$ROOT/sys/bus/pci/drivers/nouveau" "$ROOT/sys/module/nouveau"
for d in "$ROOT"/sys/bus/pci/devices/*; do ln -s ../../drivers/nouveau "$d/driver"; done
