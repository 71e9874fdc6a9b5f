# The device plugin and gpulet dra both run here and hand out the same GPUs (NVIDIA/aicr#332).
. "$NODE_LIB"
dra_node 5d1c2b3a-0000-4000-8000-00000000c1a1
/usr/bin/python3 -c 'import os, socket; os.chdir(os.environ["ROOT"] + "/var/lib/kubelet/device-plugins"); socket.socket(socket.AF_UNIX).bind("nvidia-gpu.sock")'
