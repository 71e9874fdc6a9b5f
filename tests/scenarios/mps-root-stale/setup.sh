# No --pods at all: the node's MPS root tells. A control daemon once set up /run/nvidia/mps/nvidia.com/gpu
# (its pipe and log dirs) and has gone: .ready, which it removes on stop, is missing. The plugin waits for it.
mkdir -p "$ROOT/run/nvidia/mps/nvidia.com/gpu/pipe" "$ROOT/run/nvidia/mps/nvidia.com/gpu/log" "$ROOT/run/nvidia/mps/shm"
