# An HGX H100 node where the fabric manager package is installed but its service was never enabled:
# nvidia-smi shows the GPUs, and every CUDA pod fails with error 802 "system not yet initialized"
# (gpu-operator issue 1043, pytorch issue 35710).
rm -f "$ROOT/run/nvidia-fabricmanager/socket"
printf 'Package: nvidia-fabricmanager-550\nStatus: install ok installed\nVersion: 550.54.15-1\n\n' >>"$ROOT/var/lib/dpkg/status"
