# CRI-O found by its files only (no /proc): Fedora's cri-o package ships /etc/crio/crio.conf.d/10-crio.conf
# and no crio.conf (CRI-O reads the drop-in dir /etc/crio/crio.conf.d: cri-o pkg/config
# CrioConfigDropInPath); the nvidia runtime is in 99-nvidia.toml with cdi_spec_dirs set explicitly.
. "$NODE_LIB"
no_containerd
mkdir -p "$ROOT/etc/crio/crio.conf.d"
printf '[crio.runtime]\ncdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]\n' >"$ROOT/etc/crio/crio.conf.d/10-crio.conf"
printf '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\n' \
	>"$ROOT/etc/crio/crio.conf.d/99-nvidia.toml"
real_cdi /etc/cdi
