# The node advertises 8 nvidia.com/gpu but carries no nvidia.com/gpu.product (or any GFD) label, and
# --pods shows no gpu-feature-discovery pod on it: GFD never ran here. A pending pod selects
# nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB; the scheduler's NodeAffinity filter rejects the node
# ("didn't match Pod's node affinity/selector") although its GPUs are free. GPUs themselves work, so
# a warning that names the pod waiting for the label.
