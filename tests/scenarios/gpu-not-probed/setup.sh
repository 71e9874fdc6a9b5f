# One GPU on the bus with no driver and nothing in the kernel log saying why (the log rotated): the
# nvidia module did not take it. The doctor says so, and where to look next.
. "$NODE_LIB"
drop_gpus 5
rm -rf "$ROOT/proc/driver/nvidia/gpus/0000:90:00.0"
