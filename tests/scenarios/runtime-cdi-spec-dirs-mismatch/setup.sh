sed -i 's#cdi_spec_dirs = .*#cdi_spec_dirs = ["/opt/cdi"]#' "$ROOT/etc/containerd/config.toml"
