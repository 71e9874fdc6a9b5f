# The node advertises 8 nvidia.com/gpu but carries no nvidia.com/gpu.product (or any GFD) label, and
# --pods shows no gpu-feature-discovery pod on it: GFD never ran here. Workloads selecting
# nvidia.com/gpu.product never schedule on this node; GPUs themselves work, so a warning.
