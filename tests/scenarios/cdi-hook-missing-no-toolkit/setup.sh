# The same spec on a node with no CDI hook at all (the demo's node before it installed gpulet's hook):
# the fix is to install one; no command can point the spec at a hook that does not exist.
. "$NODE_LIB"
rm -f "$ROOT/etc/cdi/nvidia.json"
mkdir -p "$ROOT/var/run/cdi"
FAKE_NVML_FIXTURE="$FIXTURE" "$GPULET" cdi generate --root "$ROOT" --nvml-library "$FAKE_NVML_LIB" --vendor k8s.device-plugin.nvidia.com \
	--class gpu --device-name-strategy uuid --format json --nvidia-cdi-hook-path /usr/bin/nvidia-ctk \
	-o "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json" >/dev/null 2>&1
