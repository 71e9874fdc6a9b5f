# Healthy but unusual: a node with the device plugin and no gpu-feature-discovery at all (GFD is an
# optional add-on of the plugin's helm chart, off by default outside the GPU Operator). No pod selects
# an nvidia.com/ node label, so nothing waits for GFD's labels: no warning.
