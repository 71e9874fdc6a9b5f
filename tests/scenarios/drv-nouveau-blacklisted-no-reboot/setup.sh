# nouveau was blacklisted in /etc/modprobe.d but the node was not rebooted (or the initramfs still
# carries nouveau): it still owns the T4. The blacklist is right; the reboot is what is missing.
rm -rf "$ROOT/proc/driver/nvidia" "$ROOT/sys/module/nvidia"
mkdir -p "$ROOT/sys/bus/pci/drivers/nouveau" "$ROOT/sys/module/nouveau" "$ROOT/etc/modprobe.d"
ln -s ../../drivers/nouveau "$ROOT/sys/bus/pci/devices/0000:00:1e.0/driver"
printf 'blacklist nouveau\noptions nouveau modeset=0\n' >"$ROOT/etc/modprobe.d/blacklist-nouveau.conf"
