# nvidia-container-runtime.cdi needs a generated spec (nvidia-ctk cdi generate) and there is none
rm -rf "$ROOT/etc/cdi"
sed -i 's#/usr/bin/nvidia-container-runtime"#/usr/bin/nvidia-container-runtime.cdi"#' "$ROOT/etc/containerd/config.toml"
cp "$ROOT/usr/bin/nvidia-container-runtime" "$ROOT/usr/bin/nvidia-container-runtime.cdi"
