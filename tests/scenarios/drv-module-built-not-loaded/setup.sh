# The module is built for the running kernel (modules.dep lists it) and nothing refused it: it is simply
# not loaded yet (nvidia-persistenced or the modules-load entry missing). No deeper reason is made up:
# the plain driver.not-loaded with "modprobe nvidia" is the right answer.
rm -rf "$ROOT/proc/driver/nvidia" "$ROOT/sys/module/nvidia"
mkdir -p "$ROOT/proc/sys/kernel" "$ROOT/lib/modules/6.8.0-45-generic/updates/dkms"
echo 6.8.0-45-generic >"$ROOT/proc/sys/kernel/osrelease"
printf 'updates/dkms/nvidia.ko.zst:\nupdates/dkms/nvidia-uvm.ko.zst: updates/dkms/nvidia.ko.zst\n' >"$ROOT/lib/modules/6.8.0-45-generic/modules.dep"
