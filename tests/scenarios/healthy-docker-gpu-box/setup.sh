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
# No trace of kubelet either: no process, no kubelet/k3s/RKE2/k0s/MicroK8s unit, no kubelet.conf or
# config.yaml, no kubelet binary, no /var/lib/kubelet. An SRE asked "is kubelet down?" on such a box
# answers "this is not a Kubernetes node": the kubelet, plugin and allocation links are skipped with
# that reason and the doctor passes (exit 0) with no failure. A box with any of those traces but no
# running kubelet still fails kubelet.not-running (scenarios kubelet-not-running*).
