# A k3s node whose admin customised containerd the supported way: config-v3.toml.tmpl next to the
# rendered config.toml (k3s pkg/agent/containerd/config.go templateGenerations: config-v3.toml.tmpl,
# then config.toml.tmpl). The rendered file carries the nvidia runtime; found through the live process.
. "$NODE_LIB"
no_containerd
rancher_config k3s 3 nvidia
d="$ROOT/var/lib/rancher/k3s/agent/etc/containerd"
printf '{{ template "base" . }}\n' >"$d/config-v3.toml.tmpl"
real_cdi /var/run/cdi
proc 901 containerd -c /var/lib/rancher/k3s/agent/etc/containerd/config.toml -a /run/k3s/containerd/containerd.sock
