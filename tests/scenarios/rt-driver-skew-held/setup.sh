# The kernel module was upgraded to 550.54.15 (DKMS built the new module and the node rebooted), but
# the user-space packages were held at 535 (apt-mark hold libnvidia-compute-535): the loaded module is
# newer than libnvidia-ml. A reboot keeps the 550 module: the user-space side must move
# (docs/reference/field-guide.md §4.4).
sed -i 's/ 535\.[0-9.]* / 550.54.15 /' "$ROOT/proc/driver/nvidia/version"
cat >>"$ROOT/var/lib/dpkg/status" <<'D'
Package: libnvidia-compute-535
Status: hold ok installed
Version: 535.161.08-0ubuntu1

D
