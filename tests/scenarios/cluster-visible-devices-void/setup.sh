# Healthy but unusual: the same nvidia default runtime, and a pod that requests no GPU sets
# NVIDIA_VISIBLE_DEVICES=void, which the NVIDIA hook reads as "inject nothing" (the usual way to run a
# CUDA image without GPUs). It gets no GPU: nothing to report.
sed -i 's/default_runtime_name = "runc"/default_runtime_name = "nvidia"/' "$ROOT/etc/containerd/config.toml"
