# An RKE2 1.32 agent: rke2 runs containerd with -c /var/lib/rancher/rke2/agent/etc/containerd/config.toml
# (same agent code as k3s) rendered as version 3 with the nvidia runtime (nvidia-container-runtime is
# installed from NVIDIA's packages, RKE2 docs "Deploy NVIDIA operator"). No /etc/containerd.
. "$NODE_LIB"
no_containerd
rancher_config rke2 3 nvidia
real_cdi /etc/cdi
proc 1201 /usr/local/bin/rke2 agent
proc 1230 /var/lib/rancher/rke2/data/v1.32.3-rke2r1/bin/containerd -c /var/lib/rancher/rke2/agent/etc/containerd/config.toml -a /run/k3s/containerd/containerd.sock
