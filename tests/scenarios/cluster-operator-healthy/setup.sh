# Healthy but unusual: a GPU Operator node. The driver comes from the operator's driver container
# (no libnvidia-ml on the host's /usr/lib), all operands run, the validator's four init containers
# completed, NFD and GFD labels are present, the upgrade state is upgrade-done, and dcgm-exporter sets
# NVIDIA_VISIBLE_DEVICES=all without requesting a GPU as NVIDIA's monitoring components do by design.
# Nothing to report from the cluster.
mkdir -p "$ROOT/run/nvidia/driver/usr/lib"
mv "$ROOT"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so* "$ROOT/run/nvidia/driver/usr/lib/"
