# Debian 12 boots with cgroup v2 only, and the node kept libnvidia-container 1.7.0 from an old
# repository: it knows only cgroup v1's devices controller ("nvidia-container-cli: container error: cgroup
# subsystem devices not found", k8s-device-plugin issue 235, nvidia-docker issue 1447).
mkdir -p "$ROOT/etc/nvidia-container-runtime"
printf '[nvidia-container-cli]\nldconfig = "@/sbin/ldconfig"\n' >"$ROOT/etc/nvidia-container-runtime/config.toml"
mkdir -p "$ROOT/sbin" "$ROOT/sys/fs/cgroup" && printf '#!/bin/sh\n' >"$ROOT/sbin/ldconfig" && chmod 0755 "$ROOT/sbin/ldconfig"
printf 'cpuset cpu io memory hugetlb pids rdma misc\n' >"$ROOT/sys/fs/cgroup/cgroup.controllers"
printf 'Package: libnvidia-container1\nStatus: install ok installed\nVersion: 1.7.0-1\n\n' >>"$ROOT/var/lib/dpkg/status"
