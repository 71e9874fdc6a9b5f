# containerd's default runtime is nvidia (nvidia-ctk --set-as-default). A pod requests no GPU but
# sets NVIDIA_VISIBLE_DEVICES=all: the nvidia runtime's hook injects every GPU anyway, outside the
# scheduler's accounting, so it shares GPUs other pods were allocated.
sed -i 's/default_runtime_name = "runc"/default_runtime_name = "nvidia"/' "$ROOT/etc/containerd/config.toml"
