# k3s 1.28 (containerd 1.7, config version 2) inspected from a rescue shell: no processes under /proc,
# only the config k3s rendered at its last start under /var/lib/rancher/k3s/agent/etc/containerd/
# with the nvidia runtime k3s adds when it finds nvidia-container-runtime (k3s nvidia.go). The
# workload uses runtimeClassName: nvidia (k3s docs "NVIDIA Container Runtime Support"), so CDI being
# off (containerd 1.7 default) and no CDI spec on disk are both fine.
. "$NODE_LIB"
no_containerd
rm -f "$ROOT/etc/cdi/nvidia.json"
rancher_config k3s 2 nvidia
