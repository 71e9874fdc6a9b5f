# containerd 2.x has CDI on by default, but a drop-in turned it off (enable_cdi = false under
# plugins.'io.containerd.cri.v1.runtime'); the device plugin returns CDI devices from its spec in
# /var/run/cdi, which containerd now ignores. The fix is the containerd 2 key, not the 1.x grpc.v1.cri one.
. "$NODE_LIB"
printf 'Package: containerd\nStatus: install ok installed\nVersion: 2.0.4-1\n\n' >"$ROOT/var/lib/dpkg/status"
mkdir -p "$ROOT/etc/containerd/conf.d"
printf 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n' >"$ROOT/etc/containerd/config.toml"
printf "version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = false\n" >"$ROOT/etc/containerd/conf.d/10-site.toml"
mkdir -p "$ROOT/var/run/cdi"
mv "$ROOT/etc/cdi/nvidia.json" "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
proc 455 /usr/bin/containerd
