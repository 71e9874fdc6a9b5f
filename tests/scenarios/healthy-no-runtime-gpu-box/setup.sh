# A GPU workstation/server that is no Kubernetes node at all: the driver and toolkit packages, no
# containerd, no CRI-O, no kubelet (no /var/lib/kubelet). The doctor must not describe a runtime it
# never found (the real-GPU report of docs/real-gpu.md: "containerd has no config.toml" on a box with
# no containerd at all); what it could not check is listed as skipped.
. "$NODE_LIB"
no_containerd
rm -rf "$ROOT/var/lib/kubelet"
real_cdi /etc/cdi
# No trace of kubelet either: no process, no kubelet/k3s/RKE2/k0s/MicroK8s unit, no kubelet.conf or
# config.yaml, no kubelet binary, no /var/lib/kubelet. An SRE asked "is kubelet down?" on such a box
# answers "this is not a Kubernetes node": the kubelet, plugin and allocation links are skipped with
# that reason and the doctor passes (exit 0) with no failure. A box with any of those traces but no
# running kubelet still fails kubelet.not-running (scenarios kubelet-not-running*).
