# kubeadm's kubelet.service (mkroot --kubeadm-unit) reads Debian's /etc/default/kubelet, and an
# EnvironmentFile= overrides the drop-in's Environment=
mkdir -p "$ROOT/etc/systemd/system/kubelet.service.d" "$ROOT/etc/default"
printf '[Service]\nEnvironment="KUBELET_EXTRA_ARGS=--root-dir=/var/lib/not-this-one"\n' \
  > "$ROOT/etc/systemd/system/kubelet.service.d/20-extra.conf"
echo 'KUBELET_EXTRA_ARGS=--root-dir=/data/kubelet' > "$ROOT/etc/default/kubelet"
