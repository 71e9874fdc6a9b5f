# After a reboot /var/run/cdi is empty but the checkpoint still says the claim is prepared
# (kubernetes#141433): the containers fail with an unresolvable CDI device.
. "$NODE_LIB"
dra_node 5d1c2b3a-0000-4000-8000-00000000c1a1
rm -f "$ROOT/var/run/cdi/k8s.gpu.nvidia.com-claim_5d1c2b3a-0000-4000-8000-00000000c1a1.yaml"
