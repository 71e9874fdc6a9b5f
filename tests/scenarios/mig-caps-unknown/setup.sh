# MIG instances exist, but /proc/driver/nvidia-caps/mig-minors cannot be read where gpulet runs (a pod
# without the host's /proc): no MIG device can get its access capability nodes.
rm -f "$ROOT/proc/driver/nvidia-caps/mig-minors"
