# The scheduler reports the pending GPU pod "0/1 nodes are available: 1 Insufficient nvidia.com/gpu"
# (NodeResourcesFit). The pod is still Pending, so the event is current: it maps onto the plugin /
# allocation links (nothing advertised or everything allocated).
