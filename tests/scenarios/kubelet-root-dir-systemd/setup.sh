# kubeadm's kubelet.service (mkroot --kubeadm-unit); the admin's drop-in moves kubelet to the data disk
mkdir -p "$ROOT/etc/systemd/system/kubelet.service.d"
cat > "$ROOT/etc/systemd/system/kubelet.service.d/20-root-dir.conf" <<'EOF'
[Service]
Environment="KUBELET_EXTRA_ARGS=--root-dir=/data/kubelet --v=2"
EOF
