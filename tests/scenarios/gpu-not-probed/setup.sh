# One GPU on the bus with no driver and nothing in the kernel log saying why (the log rotated): the
# nvidia module did not take it. The doctor says so, and where to look next.
python3 - "$FIXTURE" <<'P'
import json, sys
f = json.load(open(sys.argv[1])); del f["gpus"][5]; json.dump(f, open(sys.argv[1], "w"))
P
rm -rf "$ROOT/proc/driver/nvidia/gpus/0000:90:00.0"
