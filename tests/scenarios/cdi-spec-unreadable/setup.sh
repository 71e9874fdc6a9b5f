# rootless containerd (uid 1000) cannot read a 0600 root-owned spec: it skips it without a word
chmod 0600 "$ROOT/etc/cdi/nvidia.json"
