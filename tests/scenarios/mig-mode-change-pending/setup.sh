# MIG was enabled on GPU 1 (nvidia-smi -mig 1) but the GPU was never reset: NVML's pending mode is on,
# the current mode still off. The plugin keeps advertising a whole GPU until a reset or reboot.
