# The device plugin's own CDI spec names its default hook /usr/bin/nvidia-ctk (k8s-device-plugin
# api/config/v1/consts.go), but the node has the toolkit 1.16+ split binary /usr/bin/nvidia-cdi-hook only:
# every GPU container fails with "error running createContainer hook #0: fork/exec /usr/bin/nvidia-ctk: no
# such file or directory" (siderolabs/talos issue 13021). Nothing about the GPUs is stale: the fix is
# the hook path, for the spec's own kind, in its own file, on this node.
. "$NODE_LIB"
plugin_spec /usr/bin/nvidia-ctk
printf '#!/bin/sh\nexit 0\n' >"$ROOT/usr/bin/nvidia-cdi-hook" && chmod 0755 "$ROOT/usr/bin/nvidia-cdi-hook"
