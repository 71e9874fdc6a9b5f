# Healthy but unusual: a CDI-only node. The plugin returns cdi_devices, containerd has enable_cdi = true
# with the default spec dirs holding the plugin's spec, the default runtime is runc and there is no
# nvidia runtime at all; the pod has no runtimeClassName. containerd resolves the CDI names itself
# (pkg/cri WithCDI), so the GPU is injected: no failure, and no warning about runc or a missing
# nvidia handler.
python3 - "$ROOT/etc/containerd/config.toml" <<'EOF'
import sys
p = sys.argv[1]
lines = open(p).read().split('\n')
out, skip = [], False
for l in lines:
    if l.strip().startswith('[') and 'runtimes.nvidia' in l:
        skip = True
    elif l.strip().startswith('['):
        skip = False
    if not skip:
        out.append(l)
open(p, 'w').write('\n'.join(out))
EOF
mkdir -p "$ROOT/var/run/cdi"
sed 's#"kind": "nvidia.com/gpu"#"kind": "k8s.device-plugin.nvidia.com/gpu"#' "$ROOT/etc/cdi/nvidia.json" > "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"
rm "$ROOT/etc/cdi/nvidia.json"
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" cdi k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
