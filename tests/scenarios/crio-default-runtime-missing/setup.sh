# CRI-O's drop-in sets default_runtime = "nvidia" (copied from a guide) but the [crio.runtime.runtimes.nvidia]
# table was never written: CRI-O refuses to start ("default_runtime set to "nvidia", but no runtime entry
# table [crio.runtime.runtimes.nvidia] was found", cri-o pkg/config/config.go).
. "$NODE_LIB"
no_containerd
mkdir -p "$ROOT/etc/crio/crio.conf.d"
printf '[crio.runtime]\ndefault_runtime = "nvidia"\n' >"$ROOT/etc/crio/crio.conf.d/50-default.conf"
proc 900 /usr/bin/crio
