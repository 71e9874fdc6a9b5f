# kubeadm join wrote the node's flags; an admin added --root-dir there (no systemd unit in this root)
cat > "$ROOT/var/lib/kubelet/kubeadm-flags.env" <<'EOF'
KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.9 --root-dir=/data/kubelet"
EOF
