# The plugin's ConfigMap configures sharing.mps (4 replicas per GPU) and GFD labels the node
# nvidia.com/gpu.sharing-strategy=mps. With MPS the plugin only hands out replicas once the MPS
# control daemon (nvidia-device-plugin-mps-control-daemon DaemonSet, cmd/mps-control-daemon) has
# started nvidia-cuda-mps-control for the GPUs; no such pod runs on this node, so shared-GPU pods
# cannot start.
