# A hand-made CDI spec for a RHEL host mounts the driver libraries into /usr/lib64 and runs no hook:
# Ubuntu/Debian images (nvidia/cuda's base) do not search /usr/lib64 and nothing runs ldconfig, so
# libcuda.so.1 never loads in them (docs/reference/container-runtimes.md §5).
lib=$(find "$ROOT/usr/lib/x86_64-linux-gnu" -name 'libcuda.so.1' | head -1)
test -n "$lib"
cat >"$ROOT/etc/cdi/nvidia.json" <<J
{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
 "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}],
 "containerEdits": {"deviceNodes": [{"path": "/dev/nvidiactl"}, {"path": "/dev/nvidia-uvm"}],
  "mounts": [{"hostPath": "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "containerPath": "/usr/lib64/libcuda.so.1", "options": ["ro", "nosuid", "nodev", "bind"]}]}}
J
