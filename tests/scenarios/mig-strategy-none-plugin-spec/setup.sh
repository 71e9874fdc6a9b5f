# Healthy, told by the spec instead of the plugin pod (no --pods entry for the plugin): gpulet's plugin
# under --mig-strategy=none writes /var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json defining each
# MIG-enabled GPU whole beside its MIG devices (docs/reference/device-plugin.md §8), which it does under
# no other strategy (cdi generate and nvcdi skip such a GPU). So the whole GPUs 6 and 7 in the
# checkpoint are the strategy's doing, not a layout the plugin missed.
CK="$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
/usr/bin/python3 - "$CK" "$FIXTURE" <<'PY'
import json, sys
ck = json.load(open(sys.argv[1]))
fx = json.load(open(sys.argv[2]))
ck["Data"]["RegisteredDevices"] = {"nvidia.com/gpu": [g["uuid"] for g in fx["gpus"]]}
json.dump(ck, open(sys.argv[1], "w"))
PY
rm -f "$ROOT"/var/lib/kubelet/device-plugins/nvidia-mig-*.sock
mkdir -p "$ROOT/var/run/cdi"
/usr/bin/python3 - "$ROOT/etc/cdi/nvidia.json" "$FIXTURE" "$ROOT/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json" <<'PY'
import json, sys
base = json.load(open(sys.argv[1]))
fx = json.load(open(sys.argv[2]))
node = base["devices"][0]["containerEdits"]
devs = [{"name": g["uuid"], "containerEdits": {"deviceNodes": [{"path": f"/dev/nvidia{g['minor']}"}]}} for g in fx["gpus"]]
devs += [{"name": ci["uuid"], "containerEdits": node} for g in fx["gpus"] for gi in g.get("mig", []) for ci in gi.get("cis", [])]
json.dump({"cdiVersion": base["cdiVersion"], "kind": "k8s.device-plugin.nvidia.com/gpu", "devices": devs,
           "containerEdits": base["containerEdits"]}, open(sys.argv[3], "w"))
PY
