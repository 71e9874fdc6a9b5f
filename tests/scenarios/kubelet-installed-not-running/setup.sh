# The kubelet package is installed (/usr/bin/kubelet, as the kubeadm deb puts it) but nothing else:
# no /var/lib/kubelet, no unit drop-in, no process. Someone meant this box to be a node (kubelet
# crash-loops until kubeadm join writes its config), so a missing kubelet is a failure here, unlike
# the box with no trace of kubelet at all (healthy-no-runtime-gpu-box).
. "$NODE_LIB"
rm -rf "$ROOT/var/lib/kubelet"
mkdir -p "$ROOT/usr/bin"
printf '#!/bin/sh\n' >"$ROOT/usr/bin/kubelet"
chmod 755 "$ROOT/usr/bin/kubelet"
