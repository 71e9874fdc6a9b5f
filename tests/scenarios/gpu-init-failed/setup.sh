# The driver probed all eight GPUs but could not bring one up ("RmInitAdapter: Cannot initialize GSP
# firmware RM", "RmInitAdapter failed!", open-gpu-kernel-modules issue 1230): its firmware files are all
# there, the GPU itself is in a bad state. NVML lists seven.
. "$NODE_LIB"
drop_gpus 2
