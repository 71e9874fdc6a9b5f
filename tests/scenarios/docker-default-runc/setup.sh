# kubelet runs pods on Docker through cri-dockerd. nvidia-ctk added the nvidia runtime to daemon.json
# but did not make it the default, and the device plugin hands GPUs over as NVIDIA_VISIBLE_DEVICES:
# pods get runc and no GPU. Docker's containerd (CRI plugin disabled) is not the runtime to judge.
. "$NODE_LIB"
docker_node '{"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}}'
