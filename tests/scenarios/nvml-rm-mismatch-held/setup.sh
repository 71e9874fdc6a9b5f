# The other direction: DKMS rebuilt the 550 module and the node rebooted, but the user-space packages
# were held at 535 (apt-mark hold): the module is newer than libnvidia-ml, NVML refuses to start, and a
# reboot changes nothing. An older driver's wording of the API mismatch line.
cat >>"$ROOT/var/lib/dpkg/status" <<'D'
Package: libnvidia-compute-535
Status: hold ok installed
Version: 535.161.08-0ubuntu1

D
