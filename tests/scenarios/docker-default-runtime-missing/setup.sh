# daemon.json was hand-edited to make nvidia the default but its runtimes entry was left out: dockerd
# does not start, and no pod starts on this node.
. "$NODE_LIB"
printf 'Package: docker-ce\nStatus: install ok installed\nVersion: 5:26.1.4-1~ubuntu.22.04~jammy\n\nPackage: containerd.io\nStatus: install ok installed\nVersion: 1.7.18-1\n\nPackage: nvidia-container-toolkit\nStatus: install ok installed\nVersion: 1.17.8-1\n\n' >"$ROOT/var/lib/dpkg/status"
printf '#   Copyright 2018-2022 Docker Inc.\ndisabled_plugins = ["cri"]\n' >"$ROOT/etc/containerd/config.toml"
mkdir -p "$ROOT/etc/docker"
printf '#!/bin/sh\n' >"$ROOT/usr/bin/cri-dockerd" && chmod 0755 "$ROOT/usr/bin/cri-dockerd"
proc 610 /usr/bin/containerd
proc 700 /usr/bin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock
proc 720 /usr/bin/cri-dockerd --container-runtime-endpoint fd://
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" env NVIDIA_VISIBLE_DEVICES=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
printf '{"default-runtime": "nvidia", "exec-opts": ["native.cgroupdriver=systemd"]}\n' >"$ROOT/etc/docker/daemon.json"
