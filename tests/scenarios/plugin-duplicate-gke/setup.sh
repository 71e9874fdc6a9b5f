# On GKE a user also deployed NVIDIA's device plugin: GKE's own plugin (socket nvidiaGPU-<time>.sock)
# and NVIDIA's (nvidia-gpu.sock) both serve nvidia.com/gpu. The socket GKE's plugin made later is the
# one kubelet kept.
sock=$ROOT/var/lib/kubelet/device-plugins/nvidiaGPU-1709629200.sock
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$sock"
touch -d '2024-03-01 08:00:00' "$ROOT/var/lib/kubelet/device-plugins/nvidia-gpu.sock"
touch -h -d '2024-03-05 09:30:00' "$sock"
