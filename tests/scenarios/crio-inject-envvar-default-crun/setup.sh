# CRI-O node (crio.conf: default_runtime crun; the nvidia runtime in nvidia-ctk's drop-in) with the
# device plugin on its default strategy envvar: kubelet's checkpoint shows Allocate returned
# NVIDIA_VISIBLE_DEVICES only. The GPU pod names no RuntimeClass, so CRI-O runs it under crun, which
# ignores the env var (only nvidia-container-runtime's hook acts on it): it starts without a GPU. The
# injection check reads CRI-O's runtimes and default through the same runtime facts as containerd's
# (docs/reference/container-runtimes.md §3), so it names the missing runtime class on CRI-O too.
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
T
real_cdi /etc/cdi
proc 700 /usr/bin/crio
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" env NVIDIA_VISIBLE_DEVICES=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
