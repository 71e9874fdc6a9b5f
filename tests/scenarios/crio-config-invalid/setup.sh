# A hand-edited CRI-O drop-in with a TOML syntax error: crio refuses to start (it decodes every file
# of crio.conf.d), so no container starts on the node.
. "$NODE_LIB"
no_containerd
mkdir -p "$ROOT/etc/crio/crio.conf.d"
printf '[crio.runtime.runtimes.nvidia\nruntime_path = "/usr/bin/nvidia-container-runtime"\n' \
	>"$ROOT/etc/crio/crio.conf.d/99-nvidia.toml"
proc 700 /usr/bin/crio
