# The same node, but the plugin runs with --mig-strategy=mixed: under mixed a MIG-enabled GPU is never
# advertised whole, its instances are (nvidia.com/mig-<profile>). Whole GPUs 6 and 7 in the checkpoint
# mean the plugin registered before MIG was enabled and was not restarted: stale, as before.
CK="$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
/usr/bin/python3 - "$CK" "$FIXTURE" <<'PY'
import json, sys
ck = json.load(open(sys.argv[1]))
fx = json.load(open(sys.argv[2]))
ck["Data"]["RegisteredDevices"] = {"nvidia.com/gpu": [g["uuid"] for g in fx["gpus"]]}
json.dump(ck, open(sys.argv[1], "w"))
PY
rm -f "$ROOT"/var/lib/kubelet/device-plugins/nvidia-mig-*.sock
