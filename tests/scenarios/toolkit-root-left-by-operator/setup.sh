# The GPU Operator's driver container was removed in favour of a host driver, but its toolkit left
# root = "/run/nvidia/driver" in the host's config.toml: the hook looks for libnvidia-ml.so.1 there and
# every GPU container fails (gpu-operator issues 511, 625). The fix drops the line (root: the host).
mkdir -p "$ROOT/etc/nvidia-container-runtime"
printf '[nvidia-container-cli]\nenvironment = []\nroot = "/run/nvidia/driver"\nldconfig = "@/sbin/ldconfig.real"\n\n[nvidia-container-runtime]\nmode = "auto"\n' \
	>"$ROOT/etc/nvidia-container-runtime/config.toml"
mkdir -p "$ROOT/sbin" && printf '#!/bin/sh\n' >"$ROOT/sbin/ldconfig.real" && chmod 0755 "$ROOT/sbin/ldconfig.real"
