# nvidia-ctk runtime configure --runtime=crio from toolkit 1.18/1.19 wrote /etc/crio/conf.d/99-nvidia.toml
# (fixed in 1.20.0, NVIDIA/nvidia-container-toolkit 584f68ef), a directory CRI-O never reads: its
# drop-in dir is /etc/crio/crio.conf.d (cri-o pkg/config CrioConfigDropInPath). No CDI spec exists and
# the pod asks for runtimeClassName nvidia: CRI-O has no such handler, the pod fails.
. "$NODE_LIB"
no_containerd
rm -f "$ROOT/etc/cdi/nvidia.json"
mkdir -p "$ROOT/etc/crio/conf.d"
printf '[crio.runtime]\ndefault_runtime = "crun"\n' >"$ROOT/etc/crio/crio.conf"
printf '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\n' \
	>"$ROOT/etc/crio/conf.d/99-nvidia.toml"
proc 700 /usr/bin/crio
