# A claim allocated from this node's pool, its pod stuck in ContainerCreating, and the driver's
# checkpoint does not hold it: the prepare never happened or failed.
. "$NODE_LIB"
dra_node
