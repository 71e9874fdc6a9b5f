#!/bin/sh
# finish-root.sh ROOT: what every image root (amd64, arm64) gets once its packages are unpacked, before
# gpulet is installed into it: no state of apt or dpkg but the status file (scanners read it), no
# build-host files (/etc/hostname, resolv.conf, fstab, lock files), no empty FHS dirs of base-files (the
# runtime makes its mount points), then /host and /tmp (the chart's mount points) and a passwd and group
# naming root.
set -eu
root=$1
(cd "$root" && rm -rf etc/apt etc/dpkg etc/hostname etc/resolv.conf etc/fstab var/cache var/lib/apt var/log \
	var/lib/dpkg/alternatives var/lib/dpkg/info var/lib/dpkg/triggers var/lib/dpkg/updates var/lib/dpkg/arch \
	var/lib/dpkg/lock var/lib/dpkg/lock-frontend)
find "$root" -depth -mindepth 1 -type d -empty ! -path "$root/var/lib/dpkg" -delete
mkdir -p "$root/host" "$root/tmp" "$root/etc"
chmod 1777 "$root/tmp"
printf 'root:x:0:0:root:/:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
