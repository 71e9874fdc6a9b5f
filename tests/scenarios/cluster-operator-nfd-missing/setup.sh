# The GPU Operator runs (its controller pod on the control plane) but NFD is not deployed: this node
# has no feature.node.kubernetes.io/pci-10de.present (nor the class-specific pci-0302/0300 labels),
# so the operator never labels it nvidia.com/gpu.present=true and schedules none of its operands here
# (controllers/state_manager.go gpuNodeLabels). No plugin, no GPUs: a failure, named at its cause.
mkdir -p "$ROOT/run/nvidia/driver/usr/lib"
mv "$ROOT"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so* "$ROOT/run/nvidia/driver/usr/lib/"
