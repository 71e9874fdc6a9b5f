# The device plugin pod restarts in CrashLoopBackOff and its last termination was OOMKilled (exit 137):
# kubelet killed it at its memory limit. While it is down, its socket is gone or stale and kubelet
# has no one to call Allocate on. The GPUs themselves are healthy (no
# XID, NVML fine): the cause is the plugin pod, not "GPUs unhealthy".
# kubelet marks a disconnected plugin's devices unhealthy (Allocatable 0) and keeps Capacity until the
# 5-minute grace period ends, which a pod restarting faster never reaches: --node shows 8 / 0. The short
# Allocatable is explained by the pod, a warning under it, never "GPUs marked unhealthy".
