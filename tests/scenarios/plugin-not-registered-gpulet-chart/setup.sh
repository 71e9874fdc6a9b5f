# gpulet's chart runs the plugin (namespace gpulet, DaemonSet gpulet-device-plugin), which has not
# registered yet: the fix names gpulet's DaemonSet, not NVIDIA's nvidia-device-plugin-daemonset.
rm -f "$ROOT"/var/lib/kubelet/device-plugins/nvidia-*.sock
