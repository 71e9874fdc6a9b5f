# containerd 2.x where GPUs come only through CDI: no nvidia runtime anywhere, the CDI settings
# (cdi_spec_dirs) only in a drop-in, the device plugin's spec in /var/run/cdi and pods without
# runtimeClassName. containerd 2 merges v3 imports key by key and has enable_cdi on by default
# (docs/reference/container-runtimes.md §2): healthy.
. "$NODE_LIB"
printf 'Package: containerd\nStatus: install ok installed\nVersion: 2.1.1-1\n\n' >"$ROOT/var/lib/dpkg/status"
mkdir -p "$ROOT/etc/containerd/conf.d"
printf 'version = 3\nimports = ["conf.d/*.toml"]\n' >"$ROOT/etc/containerd/config.toml"
cat >"$ROOT/etc/containerd/conf.d/50-cdi.toml" <<'T'
version = 3
[plugins.'io.containerd.cri.v1.runtime']
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
T
rm -f "$ROOT/usr/bin/nvidia-container-runtime"
real_cdi /var/run/cdi
mv "$ROOT/var/run/cdi/nvidia.yaml" "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.yaml"
proc 455 /usr/bin/containerd --config /etc/containerd/config.toml
