# Healthy: the same CRI-O node and envvar plugin, and the GPU pod runs with runtimeClassName nvidia, the
# handler of the drop-in whose runtime_path is nvidia-container-runtime: its hook injects from the env var.
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
