# The open GPU kernel module (default from driver 560 on Hopper/Blackwell) says
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build ..." in
# /proc/driver/nvidia/version (docs/reference/real-driver.md); nothing else differs for containers.
. "$NODE_LIB"
v=$(sed -n 's/.*Module  *\([0-9.]*\) .*/\1/p' "$ROOT/proc/driver/nvidia/version" | head -1)
printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Oct 17 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n' "$v" >"$ROOT/proc/driver/nvidia/version"
real_cdi /etc/cdi
