# Any user can start a process named "containerd -c FILE" (argv is the caller's choice). Here uid 1000
# runs one pointing at a config without the nvidia runtime, while root's containerd reads the healthy
# /etc/containerd/config.toml. Only a process of the runtime's user (root, or --runtime-user) counts,
# so the doctor reads root's containerd (Uid: line of /proc/PID/status, real then effective).
. "$NODE_LIB"
real_cdi /etc/cdi
mkdir -p "$ROOT/tmp"
printf 'version = 2\n' >"$ROOT/tmp/evil.toml"
proc 300 /home/u/bin/containerd -c /tmp/evil.toml
printf 'Name:\tcontainerd\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n' >"$ROOT/proc/300/status"
proc 455 /usr/bin/containerd
printf 'Name:\tcontainerd\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n' >"$ROOT/proc/455/status"
