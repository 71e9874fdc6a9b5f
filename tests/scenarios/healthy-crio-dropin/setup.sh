# OpenShift/Fedora-style CRI-O: crio.conf without any nvidia runtime, and the nvidia runtime in the
# drop-in nvidia-ctk (1.20.0+) writes, /etc/crio/crio.conf.d/99-nvidia.toml, which CRI-O reads after
# crio.conf in name order (cri-o pkg/config UpdateFromPath; nvidia-ctk configure.go
# defaultCrioDropInConfigFilePath). CRI-O always has CDI on. No containerd at all.
. "$NODE_LIB"
no_containerd
mkdir -p "$ROOT/etc/crio/crio.conf.d"
cat >"$ROOT/etc/crio/crio.conf" <<'T'
[crio.runtime]
default_runtime = "crun"
[crio.runtime.runtimes.crun]
runtime_path = "/usr/bin/crun"
T
cat >"$ROOT/etc/crio/crio.conf.d/99-nvidia.toml" <<'T'
[crio.runtime.runtimes.nvidia]
runtime_path = "/usr/bin/nvidia-container-runtime"
runtime_type = "oci"
monitor_path = "/usr/libexec/crio/conmon"
T
real_cdi /etc/cdi
proc 700 /usr/bin/crio
