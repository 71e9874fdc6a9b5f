rm -rf "$ROOT/var/lib/kubelet/pods/$POD_UID"
