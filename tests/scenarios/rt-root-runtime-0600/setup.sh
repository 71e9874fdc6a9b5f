# The same 0600 nodes with a root runtime and no non-root GPU pod known: root containers open them,
# so this is no failure (a warning about non-root containers stays).
chmod 0600 "$ROOT"/dev/nvidia0 "$ROOT"/dev/nvidiactl "$ROOT"/dev/nvidia-uvm
