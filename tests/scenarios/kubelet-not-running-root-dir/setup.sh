# kubelet (pid 4242, --root-dir=/data/kubelet) has not created its Registration socket
rm -f "$ROOT/var/lib/kubelet/device-plugins/kubelet.sock"
