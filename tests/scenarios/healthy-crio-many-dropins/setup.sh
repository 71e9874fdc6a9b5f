# A CRI-O node managed by configuration tooling with many drop-ins in /etc/crio/crio.conf.d (CRI-O reads
# every file there in lexical order: cri-o pkg/config UpdateFromPath); the nvidia runtime comes last
# from 99-nvidia.toml. Healthy, whatever the number of files.
. "$NODE_LIB"
no_containerd
mkdir -p "$ROOT/etc/crio/crio.conf.d"
for i in $(seq 10 39); do printf '[crio.runtime]\nlog_level = "info"\n' >"$ROOT/etc/crio/crio.conf.d/$i-site.conf"; done
printf '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\n' \
	>"$ROOT/etc/crio/crio.conf.d/99-nvidia.toml"
real_cdi /etc/cdi
proc 700 /usr/bin/crio
