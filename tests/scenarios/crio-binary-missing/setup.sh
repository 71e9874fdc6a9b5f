# CRI-O's nvidia runtime points at /usr/bin/nvidia-container-runtime but the toolkit package was
# removed: CRI-O validates runtime_path at start and the handler is unusable (cri-o ValidateRuntimes).
. "$NODE_LIB"
no_containerd
rm -f "$ROOT/usr/bin/nvidia-container-runtime"
mkdir -p "$ROOT/etc/crio/crio.conf.d"
printf '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\n' \
	>"$ROOT/etc/crio/crio.conf.d/99-nvidia.toml"
proc 700 /usr/bin/crio
