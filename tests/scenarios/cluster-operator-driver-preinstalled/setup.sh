# The GPU Operator's driver DaemonSet runs on a node whose driver is installed on the host
# (libnvidia-ml.so.1 in /usr/lib/x86_64-linux-gnu; the operator's own driver lives in its container,
# exposed under /run/nvidia/driver). Its driver container cannot unload the host's loaded nvidia
# module to load its own and exits: CrashLoopBackOff. The fix is driver.enabled=false (or the node
# label nvidia.com/gpu.deploy.driver=false).
