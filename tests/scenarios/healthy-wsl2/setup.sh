# Healthy but unusual: WSL2 (Docker Desktop or a distribution with the NVIDIA toolkit). There is no
# NVIDIA kernel module in the guest and no /dev/nvidia*: the Windows host's driver serves CUDA through
# /dev/dxg, and WSL mounts its user-space libraries under /usr/lib/wsl/lib. No PCI device, no kubelet.
rm -rf "$ROOT/proc/driver/nvidia" "$ROOT/sys/module/nvidia" "$ROOT/sys/bus/pci" "$ROOT/lib/firmware/nvidia"
mkdir -p "$ROOT/dev" "$ROOT/usr/lib/wsl/lib"
: >"$ROOT/dev/dxg"
for l in libnvidia-ml libcuda; do
	cp "$(readlink -f "$ROOT/usr/lib/x86_64-linux-gnu/$l.so.1")" "$ROOT/usr/lib/wsl/lib/$l.so.1"
done
rm -rf "$ROOT/usr/lib/x86_64-linux-gnu"
