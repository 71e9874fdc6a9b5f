# MicroK8s runs its containerd with --config ${SNAP_DATA}/args/containerd.toml, which it renders from
# args/containerd-template.toml (MicroK8s docs, "Configuring MicroK8s services"). Here the template
# never got an nvidia runtime and the pod asks for runtimeClassName nvidia, with CDI off (config
# version 2, containerd 1.7): the fix goes into containerd-template.toml, then snap restart microk8s.
. "$NODE_LIB"
no_containerd
rm -f "$ROOT/etc/cdi/nvidia.json"
d="$ROOT/var/snap/microk8s/current/args"
mkdir -p "$d"
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n' >"$d/containerd.toml"
cp "$d/containerd.toml" "$d/containerd-template.toml"
proc 3100 /snap/microk8s/7394/bin/containerd --config /var/snap/microk8s/current/args/containerd.toml --root /var/snap/microk8s/common/var/lib/containerd
