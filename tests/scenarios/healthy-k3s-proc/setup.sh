# A k3s server with containerd 2 (k3s 1.32+): k3s runs its embedded containerd as
# "containerd -c /var/lib/rancher/k3s/agent/etc/containerd/config.toml -a /run/k3s/containerd/containerd.sock ..."
# (k3s pkg/agent/containerd getContainerdArgs) and renders that config.toml (version 3) from its
# built-in template at every start, adding the "nvidia" runtime itself because nvidia-container-runtime
# is on PATH (k3s pkg/agent/containerd/nvidia.go). There is no /etc/containerd and no containerd
# package. CDI is on by default in containerd 2.x (docs/reference/container-runtimes.md §2).
# Healthy: the doctor must read k3s's file, not claim containerd runs "on defaults".
. "$NODE_LIB"
no_containerd
rancher_config k3s 3 nvidia
real_cdi /etc/cdi
proc 812 /usr/local/bin/k3s server
proc 840 containerd -c /var/lib/rancher/k3s/agent/etc/containerd/config.toml -a /run/k3s/containerd/containerd.sock --state /run/k3s/containerd --root /var/lib/rancher/k3s/agent/containerd
