# the running kubelet was started with /data/kubelet; its flags file now names another dir
echo 'KUBELET_KUBEADM_ARGS="--root-dir=/mnt/kubelet-next"' > "$ROOT/var/lib/kubelet/kubeadm-flags.env"
