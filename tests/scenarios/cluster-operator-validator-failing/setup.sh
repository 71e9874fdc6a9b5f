# The operator validator's init container toolkit-validation keeps failing (Init:CrashLoopBackOff):
# the device plugin's own init container waits for the toolkit validation's marker file, so nothing
# advertises GPUs until the toolkit is fixed. The validator pod is the evidence to name; the driver
# is the operator's (no host libraries) so no preinstalled-driver finding.
mkdir -p "$ROOT/run/nvidia/driver/usr/lib"
mv "$ROOT"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so* "$ROOT/run/nvidia/driver/usr/lib/"
