# Rootless containerd run by uid 1000 (--runtime-user 1000:1000) whose nvidia runtime's BinaryName is
# a root-only 0700 file: the runtime's user cannot execute it, so the nvidia runtime's containers fail
# to start although the file exists (docs/reference/container-runtimes.md §6).
chmod 0700 "$ROOT/usr/bin/nvidia-container-runtime"
chmod 0666 "$ROOT"/dev/nvidia0 "$ROOT"/dev/nvidiactl "$ROOT"/dev/nvidia-uvm
