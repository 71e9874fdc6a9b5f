# The GPU Operator was installed on a cluster that already ran k8s-device-plugin's static DaemonSet:
# both register nvidia.com/gpu with kubelet, which keeps only the last registration; deleting either
# DaemonSet later can leave the node with no GPUs (k8s-device-plugin issue 255).
