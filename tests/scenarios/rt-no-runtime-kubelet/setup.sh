# kubelet is configured (/var/lib/kubelet/config.yaml) but neither containerd, k3s, RKE2 nor CRI-O is
# on the node (e.g. Docker + cri-dockerd, or a runtime under another prefix). The doctor cannot read
# the runtime: it says what it looked for (runtime.not-found, a warning) and never claims
# "containerd has no config.toml" about a containerd that is not there (docs/real-gpu.md).
. "$NODE_LIB"
no_containerd
