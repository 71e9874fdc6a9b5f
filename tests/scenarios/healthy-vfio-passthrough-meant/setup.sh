# Healthy but unusual: the node is labelled for VM passthrough (the GPU Operator's sandbox workloads,
# nvidia.com/gpu.workload.config=vm-passthrough) and two GPUs are on vfio-pci on purpose.
python3 - "$FIXTURE" 4 5 <<'P'
import json, sys
f = json.load(open(sys.argv[1]))
for i in sorted(map(int, sys.argv[2:]), reverse=True):
    del f["gpus"][i]
json.dump(f, open(sys.argv[1], "w"))
P
. "$NODE_LIB"
real_cdi
mkdir -p "$ROOT/sys/bus/pci/drivers/vfio-pci" "$ROOT/sys/bus/pci/drivers/nvidia" "$ROOT/etc/driverctl.d"
for d in "$ROOT"/sys/bus/pci/devices/*; do ln -s ../../drivers/nvidia "$d/driver"; done
for b in 0000:87:00.0 0000:90:00.0; do
	rm -f "$ROOT/sys/bus/pci/devices/$b/driver" && ln -s ../../drivers/vfio-pci "$ROOT/sys/bus/pci/devices/$b/driver"
	echo vfio-pci >"$ROOT/sys/bus/pci/devices/$b/driver_override"
	rm -rf "$ROOT/proc/driver/nvidia/gpus/$b"
done
