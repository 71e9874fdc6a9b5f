# A node without nvidia-persistenced (not installed, no socket): persistence mode is off, which costs
# start-up latency, not function; the CDI generator leaves the socket out (docs/reference/cdi.md §7.5).
. "$NODE_LIB"
rm -f "$ROOT/usr/bin/nvidia-persistenced"
rm -rf "$ROOT/run/nvidia-persistenced"
real_cdi /etc/cdi
