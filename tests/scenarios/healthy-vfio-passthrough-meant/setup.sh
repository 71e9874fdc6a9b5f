# Healthy but unusual: the node is labelled for VM passthrough (the GPU Operator's sandbox workloads,
# nvidia.com/gpu.workload.config=vm-passthrough) and two GPUs are on vfio-pci on purpose.
. "$NODE_LIB"
drop_gpus 4 5
real_cdi
vfio_bound 0000:87:00.0 0000:90:00.0
