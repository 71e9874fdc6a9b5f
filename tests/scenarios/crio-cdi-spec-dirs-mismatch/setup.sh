# CRI-O told to read only /etc/cdi (cdi_spec_dirs in a drop-in) while the device plugin writes its
# CDI spec to /var/run/cdi: CRI-O never sees the devices (cri-o pkg/config cdi_spec_dirs).
. "$NODE_LIB"
no_containerd
mkdir -p "$ROOT/etc/crio/crio.conf.d" "$ROOT/var/run/cdi"
printf '[crio.runtime]\ncdi_spec_dirs = ["/etc/cdi"]\n' >"$ROOT/etc/crio/crio.conf.d/20-cdi.conf"
mv "$ROOT/etc/cdi/nvidia.json" "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
proc 700 /usr/bin/crio
