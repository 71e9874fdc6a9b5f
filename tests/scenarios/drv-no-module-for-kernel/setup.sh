# An unattended upgrade brought kernel 6.8.0-45 and the node rebooted into it; DKMS had built nvidia
# 550.54.15 only for the old kernel 6.5.0-41, and could not build it for the new one: its headers were
# not installed. modprobe nvidia: "Module nvidia not found in directory /lib/modules/6.8.0-45-generic".
rm -rf "$ROOT/proc/driver/nvidia" "$ROOT/sys/module/nvidia"
mkdir -p "$ROOT/proc/sys/kernel" "$ROOT/lib/modules/6.8.0-45-generic/kernel/drivers/net" \
	"$ROOT/lib/modules/6.5.0-41-generic/updates/dkms" "$ROOT/usr/src/linux-headers-6.5.0-41-generic" \
	"$ROOT/var/lib/dkms/nvidia/550.54.15/6.5.0-41-generic/x86_64/module" "$ROOT/var/lib/dkms/nvidia/550.54.15/build"
echo 6.8.0-45-generic >"$ROOT/proc/sys/kernel/osrelease"
printf 'kernel/drivers/net/e1000e.ko.zst:\n' >"$ROOT/lib/modules/6.8.0-45-generic/modules.dep"
printf 'updates/dkms/nvidia.ko.zst:\nkernel/drivers/net/e1000e.ko.zst:\n' >"$ROOT/lib/modules/6.5.0-41-generic/modules.dep"
ln -s /usr/src/linux-headers-6.5.0-41-generic "$ROOT/lib/modules/6.5.0-41-generic/build"
ln -s /usr/src/linux-headers-6.8.0-45-generic "$ROOT/lib/modules/6.8.0-45-generic/build"
printf 'DKMS make.log for nvidia-550.54.15 for kernel 6.8.0-45-generic (x86_64)\nmake: *** /lib/modules/6.8.0-45-generic/build: No such file or directory.  Stop.\nerror: Bad return status for module build on kernel: 6.8.0-45-generic (x86_64)\n' \
	>"$ROOT/var/lib/dkms/nvidia/550.54.15/build/make.log"
