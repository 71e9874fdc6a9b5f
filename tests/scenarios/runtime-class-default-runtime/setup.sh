# GPU pods name no RuntimeClass (--runtime-class ""): they run on containerd's default runtime, runc,
# and the device plugin's CDI names are injected by containerd itself (enable_cdi = true, a spec in
# /etc/cdi). No runtime named "" exists in any containerd config, nor need one: the empty handler is
# the default runtime (CRI RunPodSandbox with an empty runtime_handler), so no handler is missing.
:
