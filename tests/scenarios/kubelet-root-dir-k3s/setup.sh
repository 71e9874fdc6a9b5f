# k3s: config.yaml sets one root dir, a drop-in appends another (kubelet-arg+; the later one wins)
mkdir -p "$ROOT/etc/rancher/k3s/config.yaml.d"
cat > "$ROOT/etc/rancher/k3s/config.yaml" <<'EOF'
write-kubeconfig-mode: "0644"
kubelet-arg:
  - "max-pods=200"
  - "root-dir=/var/lib/kubelet-old"
EOF
cat > "$ROOT/etc/rancher/k3s/config.yaml.d/50-gpu.yaml" <<'EOF'
kubelet-arg+:
  - root-dir=/data/kubelet
EOF
echo 'kubelet-arg: [root-dir=/not-this-one]' > "$ROOT/etc/rancher/k3s/config.yaml.d/90-ignored.txt"
