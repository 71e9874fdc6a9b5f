# Healthy: the MPS control daemon runs; its root has the resource dirs and .ready.
. "$NODE_LIB"
real_cdi
mkdir -p "$ROOT/run/nvidia/mps/nvidia.com/gpu/pipe" "$ROOT/run/nvidia/mps/nvidia.com/gpu/log" "$ROOT/run/nvidia/mps/shm"
: >"$ROOT/run/nvidia/mps/.ready"
