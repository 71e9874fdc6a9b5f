# gpulet dra ran here (its plugin dir and checkpoint are there) but its registration socket is gone:
# kubelet cannot prepare claims.
. "$NODE_LIB"
dra_node 5d1c2b3a-0000-4000-8000-00000000c1a1
rm -f "$ROOT/var/lib/kubelet/plugins_registry/gpu.nvidia.com-reg.sock"
