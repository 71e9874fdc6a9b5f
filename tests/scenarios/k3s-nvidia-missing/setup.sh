# k3s started before nvidia-container-toolkit was installed: its rendered config (version 3) has no
# nvidia runtime, because k3s only adds it when it finds nvidia-container-runtime at start (k3s
# nvidia.go); the GPU pod asks for runtimeClassName nvidia and no CDI spec exists. The fix is k3s's:
# a restart of k3s (or the template), not /etc/containerd/config.toml, which k3s never reads.
. "$NODE_LIB"
no_containerd
rm -f "$ROOT/etc/cdi/nvidia.json"
rancher_config k3s 3
proc 840 containerd -c /var/lib/rancher/k3s/agent/etc/containerd/config.toml -a /run/k3s/containerd/containerd.sock
