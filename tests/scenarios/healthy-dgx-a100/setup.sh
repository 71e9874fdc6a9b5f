# A working node as a generator leaves it: the CDI spec mounts the driver libraries and runs the
# hooks (real_cdi), not the base's device-nodes-only spec; no failure and no warning.
. "$NODE_LIB"
real_cdi
