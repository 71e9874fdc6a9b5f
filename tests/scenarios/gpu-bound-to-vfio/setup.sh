# Two of the DGX's eight A100s were handed to a VM test months ago with driverctl (which keeps them on
# vfio-pci across reboots); the node advertises 6 GPUs and an 8-GPU training pod stays Pending. The
# request is right: the node lost GPUs. The doctor names the passthrough, not "lower the request".
. "$NODE_LIB"
drop_gpus 4 5
real_cdi
vfio_bound 0000:87:00.0 0000:90:00.0
mkdir -p "$ROOT/etc/driverctl.d"
printf 'vfio-pci\n' >"$ROOT/etc/driverctl.d/pci-0000:87:00.0"
printf 'vfio-pci\n' >"$ROOT/etc/driverctl.d/pci-0000:90:00.0"
