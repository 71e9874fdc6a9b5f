# The GPU Operator's driver upgrade controller (k8s-operator-libs pkg/upgrade) moved this node to
# cordon-required and cordoned it: spec.unschedulable is true, label
# nvidia.com/gpu-driver-upgrade-state=cordon-required. No new pod schedules here until the upgrade
# reaches upgrade-done and the controller uncordons; the GPUs work, so a warning that explains
# Pending pods.
mkdir -p "$ROOT/run/nvidia/driver/usr/lib"
mv "$ROOT"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so* "$ROOT/run/nvidia/driver/usr/lib/"
