# A GPU workstation/server that is no Kubernetes node at all: the driver and toolkit packages, no
# containerd, no CRI-O, no kubelet (no /var/lib/kubelet). The doctor must not describe a runtime it
# never found (the real-GPU report of docs/real-gpu.md: "containerd has no config.toml" on a box with
# no containerd at all); what it could not check is listed as skipped.
. "$NODE_LIB"
no_containerd
rm -rf "$ROOT/var/lib/kubelet"
real_cdi /etc/cdi
# expect.json covers the runtime and CDI links only (no runtime claim, no warning); kubelet.not-running
# on a box that never ran kubelet is the kubelet check's to decide, so the exit status is left at 1 here.
