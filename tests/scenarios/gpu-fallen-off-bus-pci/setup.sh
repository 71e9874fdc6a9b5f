# The driver still lists the GPU in /proc but NVML no longer does; the kernel log has only the driver's
# own "GPU has fallen off the bus" line (read as XID 79): gpu.fallen-off-bus, not an init failure.
. "$NODE_LIB"
drop_gpus 3
