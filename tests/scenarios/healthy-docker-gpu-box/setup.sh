# A Docker GPU host, no Kubernetes: Docker's containerd.io package runs containerd with its shipped
# /etc/containerd/config.toml, which disables the CRI plugin (disabled_plugins = ["cri"]), and dockerd
# uses the nvidia runtime from /etc/docker/daemon.json (nvidia-ctk runtime configure --runtime=docker).
# No kubelet. The containerd there serves no pods: no "no nvidia runtime" claim about it.
. "$NODE_LIB"
rm -rf "$ROOT/var/lib/kubelet"
printf 'Package: containerd.io\nStatus: install ok installed\nVersion: 1.7.27-1\n\nPackage: nvidia-container-toolkit\nStatus: install ok installed\nVersion: 1.17.8-1\n\n' >"$ROOT/var/lib/dpkg/status"
printf '#   Copyright 2018-2022 Docker Inc.\ndisabled_plugins = ["cri"]\n' >"$ROOT/etc/containerd/config.toml"
mkdir -p "$ROOT/etc/docker"
printf '{"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}}\n' >"$ROOT/etc/docker/daemon.json"
real_cdi /etc/cdi
proc 610 /usr/bin/containerd
proc 700 /usr/bin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock
# kubelet.not-running on a box that never ran kubelet is the kubelet check's to decide (exit left at 1).
