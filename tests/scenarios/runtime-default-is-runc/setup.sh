# legacy node: no CDI at all, the nvidia runtime only via RuntimeClass; the pod has no runtimeClassName
sed -i 's/enable_cdi = true/enable_cdi = false/' "$ROOT/etc/containerd/config.toml"
rm -rf "$ROOT/etc/cdi"
