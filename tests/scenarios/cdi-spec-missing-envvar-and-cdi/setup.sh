# The plugin runs with deviceListStrategy envvar,cdi-cri: Allocate returns NVIDIA_VISIBLE_DEVICES and
# CDI names both. containerd has CDI on, so it resolves the names and fails the container when no spec
# defines them ("unresolvable CDI devices"), the env var beside them notwithstanding: a failure.
rm -f "$ROOT/etc/cdi/nvidia.json" "$ROOT"/var/run/cdi/*
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" env NVIDIA_VISIBLE_DEVICES=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60 cdi k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
