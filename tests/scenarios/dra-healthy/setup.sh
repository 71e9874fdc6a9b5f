# gpulet dra serves the node's GPUs, no device plugin: registered, its slice published, the pod's claim
# prepared with its CDI spec. Nothing to report.
. "$NODE_LIB"
dra_node 5d1c2b3a-0000-4000-8000-00000000c1a1
