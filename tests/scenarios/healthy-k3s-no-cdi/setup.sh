# k3s 1.32 (containerd 2, config version 3, CDI on by default) whose GPU pods use runtimeClassName
# nvidia and the runtime's legacy/auto mode: no CDI spec exists and none is needed. containerd 2's
# default enable_cdi only matters once something asks for CDI devices (docs/reference/container-runtimes.md
# §2), so "CDI is on but no spec" would be a false alarm here.
. "$NODE_LIB"
no_containerd
rm -f "$ROOT/etc/cdi/nvidia.json"
rancher_config k3s 3 nvidia
proc 840 containerd -c /var/lib/rancher/k3s/agent/etc/containerd/config.toml -a /run/k3s/containerd/containerd.sock
