# the plugin advertised the layout before a re-partition: an old MIG UUID, and a new instance missing
CK="$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
sed -i 's/MIG-5a1c0004-1004-5004-8004-a100c0de0004/MIG-0ld00004-1004-5004-8004-a100c0de0004/' "$CK"
