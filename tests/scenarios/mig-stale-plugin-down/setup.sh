# The device plugin is not registered (its sockets are gone): kubelet advertises none of its devices
# (the device manager drops a plugin's resources when its endpoint goes), so comparing NVML's MIG
# layout with what is advertised says nothing about a re-partition. The root cause is the plugin link;
# the MIG check is explained by it, not a second failure.
rm -f "$ROOT"/var/lib/kubelet/device-plugins/nvidia-*.sock
CK="$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
sed -i 's/MIG-5a1c0004-1004-5004-8004-a100c0de0004/MIG-0ld00004-1004-5004-8004-a100c0de0004/' "$CK"
