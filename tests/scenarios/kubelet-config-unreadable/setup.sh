# garbage everywhere: an unreadable /proc entry, bad YAML, a 2 MiB env file, an open quote
rm "$ROOT/proc/555/cmdline" && mkdir "$ROOT/proc/555/cmdline"
mkdir -p "$ROOT/etc/rancher/k3s" "$ROOT/etc/default"
printf 'kubelet-arg: ["root-dir=/x"\n  - : {\n' > "$ROOT/etc/rancher/k3s/config.yaml"
head -c 2200000 /dev/zero | tr '\0' 'A' > "$ROOT/var/lib/kubelet/kubeadm-flags.env"
printf 'KUBELET_EXTRA_ARGS="--root-dir=/data\n' > "$ROOT/etc/default/kubelet"
