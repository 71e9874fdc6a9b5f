# The pod asks for nvidia.com/gpus (plural). No device plugin registers that name (the NVIDIA plugin
# advertises nvidia.com/gpu, nvidia.com/gpu.shared or nvidia.com/mig-<profile>), so the scheduler's
# NodeResourcesFit finds no node with it and the pod stays Pending forever.
