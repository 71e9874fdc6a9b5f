# GPU pods use RuntimeClass nvidia-cdi whose handler is "nvidia-cdi"; containerd's CRI config has
# runtimes runc and nvidia only. kubelet asks containerd for a sandbox with that handler and
# containerd refuses: 'no runtime for "nvidia-cdi" is configured' (containerd
# internal/cri/server/sandbox_run.go). The handler must be named.
