# Healthy: GPUs 6 and 7 are in MIG mode and the device plugin runs with its default --mig-strategy=none
# (the pod sets no --mig-strategy, MIG_STRATEGY or flags.migStrategy). Under none upstream advertises
# every GPU whole as nvidia.com/gpu, MIG-enabled ones included, and no MIG instance
# (k8s-device-plugin internal/rm/device_map.go buildGPUDeviceMap skips a MIG-enabled GPU only under
# single/mixed), and gpulet's plugin spec defines such a GPU whole (docs/reference/device-plugin.md
# §8). A pod asking for nvidia.com/gpu gets the whole GPU, as the strategy says: nothing is stale.
CK="$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
/usr/bin/python3 - "$CK" "$FIXTURE" <<'PY'
import json, sys
ck = json.load(open(sys.argv[1]))
fx = json.load(open(sys.argv[2]))
ck["Data"]["RegisteredDevices"] = {"nvidia.com/gpu": [g["uuid"] for g in fx["gpus"]]}
json.dump(ck, open(sys.argv[1], "w"))
PY
rm -f "$ROOT"/var/lib/kubelet/device-plugins/nvidia-mig-*.sock
