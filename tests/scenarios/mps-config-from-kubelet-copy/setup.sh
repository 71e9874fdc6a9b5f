# The pods were saved with kubectl get pods (no ConfigMaps): the plugin's config is not in --pods. kubelet's
# copy of the ConfigMap volume on the node is what the plugin really reads, and it configures MPS; no
# MPS control daemon runs here, so the shared GPUs are never handed out.
d="$ROOT/var/lib/kubelet/pods/3c6e2a10-5b7d-4e8f-9a01-b2c3d4e5f601/volumes/kubernetes.io~configmap/config"
mkdir -p "$d/..2024_03_05_09_00_00.123456789"
printf 'version: v1\nflags:\n  migStrategy: none\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n' >"$d/..2024_03_05_09_00_00.123456789/config.yaml"
ln -s ..2024_03_05_09_00_00.123456789 "$d/..data"
ln -s ..data/config.yaml "$d/config.yaml"
