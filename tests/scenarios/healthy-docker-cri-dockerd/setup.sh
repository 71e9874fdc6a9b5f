# Healthy but unusual: Docker with cri-dockerd and the nvidia runtime as Docker's default (NVIDIA's
# setup for Docker nodes): GPU pods need no RuntimeClass.
. "$NODE_LIB"
docker_node '{"default-runtime": "nvidia", "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}}'
real_cdi
