# CRI-O with CDI only: the device plugin (deviceListStrategy cdi-annotations/cdi-cri) writes its spec to
# /var/run/cdi and CRI-O injects it (CDI is always on in CRI-O, cdi_spec_dirs default /etc/cdi,
# /var/run/cdi: cri-o pkg/config). No nvidia runtime is configured and no pod asks for one: healthy.
. "$NODE_LIB"
no_containerd
mkdir -p "$ROOT/etc/crio/crio.conf.d"
printf '[crio.runtime]\ndefault_runtime = "crun"\n' >"$ROOT/etc/crio/crio.conf.d/10-crio.conf"
real_cdi /var/run/cdi
mv "$ROOT/var/run/cdi/nvidia.yaml" "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.yaml"
proc 700 /usr/bin/crio --config-dir /etc/crio/crio.conf.d
