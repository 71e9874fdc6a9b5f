# GPU 3 fell off the bus (XID 79 in the kernel log) and NVML no longer lists it; the CDI spec still
# names it by UUID. The root cause is the lost GPU (gpu.fallen-off-bus), never "stale CDI spec":
# regenerating the spec would hide the GPU, not bring it back.
uuid=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); print(f["gpus"][3]["uuid"])' "$FIXTURE")
. "$NODE_LIB"
drop_gpus 3
cat >"$ROOT/etc/cdi/by-uuid.json" <<J
{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu-uuid", "devices": [
 {"name": "$uuid", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia3"}]}}]}
J
