# A RHEL-layout CDI spec (libraries under /usr/lib64) that runs the update-ldcache hook: the hook writes
# the container's /etc/ld.so.conf.d entry and runs ldconfig, so libcuda.so.1 loads in Ubuntu images too
# (docs/reference/cdi-hook.md). Not cdi.libs-not-loadable.
. "$NODE_LIB"
real_cdi /etc/cdi
sed -i 's#containerPath: /usr/lib/x86_64-linux-gnu/#containerPath: /usr/lib64/#' "$ROOT/etc/cdi/nvidia.yaml"
grep -q 'containerPath: /usr/lib64/libcuda.so.1' "$ROOT/etc/cdi/nvidia.yaml"
grep -q update-ldcache "$ROOT/etc/cdi/nvidia.yaml"
