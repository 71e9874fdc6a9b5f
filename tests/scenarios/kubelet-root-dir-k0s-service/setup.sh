# k0s install worker --data-dir=/data/k0s: kubelet's root dir is <data-dir>/kubelet
mkdir -p "$ROOT/etc/systemd/system"
cat > "$ROOT/etc/systemd/system/k0sworker.service" <<'EOF'
[Unit]
Description=k0s - Zero Friction Kubernetes

[Service]
StartLimitInterval=5
StartLimitBurst=10
ExecStart=/usr/local/bin/k0s worker --data-dir=/data/k0s --token-file=/etc/k0s/k0stoken
Restart=always
EOF
