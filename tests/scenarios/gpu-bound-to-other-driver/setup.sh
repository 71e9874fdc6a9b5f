# The nvidia module is loaded and has seven GPUs; nouveau, loaded from the initramfs before it, kept
# the eighth.
python3 - "$FIXTURE" <<'P'
import json, sys
f = json.load(open(sys.argv[1])); del f["gpus"][7]; json.dump(f, open(sys.argv[1], "w"))
P
rm -rf "$ROOT/proc/driver/nvidia/gpus/0000:bd:00.0"
mkdir -p "$ROOT/sys/bus/pci/drivers/nouveau"
ln -s ../../drivers/nouveau "$ROOT/sys/bus/pci/devices/0000:bd:00.0/driver"
