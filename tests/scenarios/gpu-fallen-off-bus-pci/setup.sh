# The driver still lists the GPU in /proc but NVML no longer does; the kernel log has only the driver's
# own "GPU has fallen off the bus" line (read as XID 79): gpu.fallen-off-bus, not an init failure.
python3 - "$FIXTURE" <<'P'
import json, sys
f = json.load(open(sys.argv[1])); del f["gpus"][3]; json.dump(f, open(sys.argv[1], "w"))
P
