# kubelet and containerd use the systemd cgroup driver, and no /dev/char links exist for the NVIDIA
# device nodes (nvidia-modprobe made them, not udev): the next systemctl daemon-reload takes the GPUs
# away from running containers ("Failed to initialize NVML: Unknown Error", nvidia-container-toolkit
# issue 48, NVIDIA's notice in nvidia-docker issue 1730). The printed fix creates the links.
rm -rf "$ROOT/dev/char"
