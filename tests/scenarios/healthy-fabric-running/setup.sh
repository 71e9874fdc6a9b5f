# Healthy: the fabric manager process runs (its socket is not there yet in this saved root: it is found
# by its process), its package matches the driver, and every GPU's fabric state is completed.
. "$NODE_LIB"
rm -f "$ROOT/run/nvidia-fabricmanager/socket"
real_cdi
printf 'Package: nvidia-fabricmanager-550\nStatus: install ok installed\nVersion: 550.54.15-1\n\n' >>"$ROOT/var/lib/dpkg/status"
proc 3100 /usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg
