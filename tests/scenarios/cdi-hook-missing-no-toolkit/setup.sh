# The same spec on a node with no CDI hook at all (the demo's node before it installed gpulet's hook):
# the fix is to install one; no command can point the spec at a hook that does not exist.
. "$NODE_LIB"
plugin_spec /usr/bin/nvidia-ctk
