# A config.toml copied from an Ubuntu node to a RHEL 9 node: ldconfig = "@/sbin/ldconfig.real" is
# Debian's wrapper, RHEL has only /sbin/ldconfig; the hook fails in every GPU container
# ("nvidia-container-cli: ldcache error: open failed: /sbin/ldconfig.real: no such file or directory").
mkdir -p "$ROOT/etc/nvidia-container-runtime"
printf '[nvidia-container-cli]\nenvironment = []\nldconfig = "@/sbin/ldconfig.real"\nload-kmods = true\n' \
	>"$ROOT/etc/nvidia-container-runtime/config.toml"
mkdir -p "$ROOT/sbin" && printf '#!/bin/sh\n' >"$ROOT/sbin/ldconfig" && chmod 0755 "$ROOT/sbin/ldconfig"
