# No allocation is in kubelet's checkpoint to look at (the AllocResp is empty), but the plugin pod
# mounts its helm ConfigMap whose config.yaml says flags.plugin.deviceListStrategy: envvar (the
# plugin reads --config-file; no flag or env overrides it here). The GPU pod names RuntimeClass
# "gpu-runc" whose handler is runc, which does not act on NVIDIA_VISIBLE_DEVICES: no GPU inside.
