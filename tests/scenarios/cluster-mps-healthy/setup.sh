# Healthy but unusual: MPS sharing with the control daemon running on the node. Each GPU pod asks
# for one replica (MPS refuses more when failRequestsGreaterThanOne, its default). Nothing wrong.
