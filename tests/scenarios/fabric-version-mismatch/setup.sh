# apt upgraded the fabric manager to 550.90.07 while the driver stayed at 550.54.15: the fabric manager
# refuses to start with the driver's version (gpu-operator issue 544), the NVLink fabric is not trained.
rm -f "$ROOT/run/nvidia-fabricmanager/socket"
printf 'Package: nvidia-fabricmanager-550\nStatus: install ok installed\nVersion: 550.90.07-1\n\n' >>"$ROOT/var/lib/dpkg/status"
mkdir -p "$ROOT/var/log"
printf '[Mar 05 2024 10:00:01] [INFO] [tid 3228] Fabric Manager version 550.90.07 is running\n[Mar 05 2024 10:00:01] [ERROR] [tid 3228] fabric manager NVIDIA GPU driver interface version 550.90.07 don'"'"'t match with driver version 550.54.15. Please update with matching NVIDIA driver package.\n' \
	>"$ROOT/var/log/fabricmanager.log"
