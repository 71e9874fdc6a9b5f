# The device plugin pod restarts in CrashLoopBackOff and its last termination was OOMKilled (exit 137):
# kubelet killed it at its memory limit. While it is down, its socket is gone or stale and kubelet
# drops nvidia.com/gpu from Allocatable after the grace period. The GPUs themselves are healthy (no
# XID, NVML fine): the cause is the plugin pod, not "GPUs unhealthy".
