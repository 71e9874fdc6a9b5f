# A single-T4 node has capacity nvidia.com/gpu 1; the pod's two containers ask for 1 GPU each, so the
# pod needs 2 (the scheduler sums regular containers). No node this size can ever hold it: Pending
# with "Insufficient nvidia.com/gpu" forever.
