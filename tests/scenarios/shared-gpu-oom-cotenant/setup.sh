# A T4 is time-sliced in four replicas; a serving pod and a training job got replicas of the same GPU.
# The training job grew to 13 GiB and the server died with "CUDA out of memory" (its termination message,
# FallbackToLogsOnError). Its request was right: the co-tenant took the memory, which time-slicing does
# not divide. kubelet's checkpoint names who holds replicas of that GPU.
uuid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpus"][0]["uuid"])' "$FIXTURE")
python3 - "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint" "$uuid" <<'P'
import json, sys
p, uuid = sys.argv[1], sys.argv[2]
ck = json.load(open(p))
ck["Data"]["PodDeviceEntries"] = [
    {"PodUID": "9a1b2c3d-0000-4000-8000-0000000000a1", "ContainerName": "server", "ResourceName": "nvidia.com/gpu", "DeviceIDs": {"0": [uuid + "::1"]}, "AllocResp": "CgA="},
    {"PodUID": "9a1b2c3d-0000-4000-8000-0000000000b2", "ContainerName": "train", "ResourceName": "nvidia.com/gpu", "DeviceIDs": {"0": [uuid + "::0"]}, "AllocResp": "CgA="}]
ck["Data"]["RegisteredDevices"] = {"nvidia.com/gpu": [uuid + "::%d" % i for i in range(4)]}
json.dump(ck, open(p, "w"))
P
