# Healthy: the toolkit's config as nvidia-ctk writes it on Ubuntu (ldconfig.real exists), cgroup v2 with
# libnvidia-container 1.17.
. "$NODE_LIB"
real_cdi
mkdir -p "$ROOT/etc/nvidia-container-runtime" "$ROOT/sbin" "$ROOT/sys/fs/cgroup"
printf '[nvidia-container-cli]\nenvironment = []\nldconfig = "@/sbin/ldconfig.real"\nload-kmods = true\n\n[nvidia-container-runtime]\nmode = "auto"\n' \
	>"$ROOT/etc/nvidia-container-runtime/config.toml"
printf '#!/bin/sh\n' >"$ROOT/sbin/ldconfig.real" && chmod 0755 "$ROOT/sbin/ldconfig.real"
printf 'cpuset cpu io memory pids\n' >"$ROOT/sys/fs/cgroup/cgroup.controllers"
printf 'Package: libnvidia-container1\nStatus: install ok installed\nVersion: 1.17.8-1\n\n' >>"$ROOT/var/lib/dpkg/status"
