# gpulet dra is registered but the cluster has a ResourceSlice of gpu.nvidia.com only for another node:
# the scheduler sees none of this node's GPUs.
. "$NODE_LIB"
dra_node
