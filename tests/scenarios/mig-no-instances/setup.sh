# MIG mode is on for GPU 7 but every GPU instance was destroyed (a mig-parted config that failed half
# way): there is nothing to advertise and CUDA sees no device on that GPU.
