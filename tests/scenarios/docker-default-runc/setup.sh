# kubelet runs pods on Docker through cri-dockerd. nvidia-ctk added the nvidia runtime to daemon.json
# but did not make it the default, and the device plugin hands GPUs over as NVIDIA_VISIBLE_DEVICES:
# pods get runc and no GPU. Docker's containerd (CRI plugin disabled) is not the runtime to judge.
. "$NODE_LIB"
printf 'Package: docker-ce\nStatus: install ok installed\nVersion: 5:26.1.4-1~ubuntu.22.04~jammy\n\nPackage: containerd.io\nStatus: install ok installed\nVersion: 1.7.18-1\n\nPackage: nvidia-container-toolkit\nStatus: install ok installed\nVersion: 1.17.8-1\n\n' >"$ROOT/var/lib/dpkg/status"
printf '#   Copyright 2018-2022 Docker Inc.\ndisabled_plugins = ["cri"]\n' >"$ROOT/etc/containerd/config.toml"
mkdir -p "$ROOT/etc/docker"
printf '#!/bin/sh\n' >"$ROOT/usr/bin/cri-dockerd" && chmod 0755 "$ROOT/usr/bin/cri-dockerd"
proc 610 /usr/bin/containerd
proc 700 /usr/bin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock
proc 720 /usr/bin/cri-dockerd --container-runtime-endpoint fd://
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" env NVIDIA_VISIBLE_DEVICES=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
printf '{"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}}\n' >"$ROOT/etc/docker/daemon.json"
