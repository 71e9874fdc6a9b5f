# The GPU node is tainted nvidia.com/gpu=present:NoSchedule (as cloud GPU node pools are). The pending
# GPU pod has no toleration for it, so the scheduler's TaintToleration filter rejects the node
# ("untolerated taint") and the pod stays Pending.
