# The chart's doctor pod: kubelet's pods/ (other pods' secrets) is not mounted, and the PodResources
# socket is there but nobody answers: the doctor cannot tell whether the holder of GPU 0 is gone and
# must say so, not report it as held by a terminated pod
rm -rf "$ROOT/var/lib/kubelet/pods"
