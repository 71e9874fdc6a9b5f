# rke2: the same config format as k3s; a single string is a list of one
mkdir -p "$ROOT/etc/rancher/rke2"
printf 'token: secret\nkubelet-arg: "--root-dir=/data/kubelet"\n' > "$ROOT/etc/rancher/rke2/config.yaml"
