# microk8s: the snap's kubelet args file, ${SNAP_COMMON} expanded as its wrapper does
mkdir -p "$ROOT/var/snap/microk8s/current/args"
cat > "$ROOT/var/snap/microk8s/current/args/kubelet" <<'EOF'
--kubeconfig=${SNAP_DATA}/credentials/kubelet.config
--cert-dir=${SNAP_DATA}/certs
--root-dir=${SNAP_COMMON}/var/lib/kubelet
--log-dir=${SNAP_COMMON}/var/log
--eviction-hard="memory.available<100Mi,nodefs.available<1Gi,imagefs.available<1Gi"
--node-labels="microk8s.io/cluster=true"
EOF
