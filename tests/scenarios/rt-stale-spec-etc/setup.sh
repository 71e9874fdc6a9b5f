# A spec in /etc/cdi from before a GPU swap names a GPU UUID that is gone. Writing a fresh spec into
# /var/run/cdi would hide it only until reboot (tmpfs); the fix regenerates the stale file itself.
cat >"$ROOT/etc/cdi/old-gpu.json" <<'J'
{"cdiVersion": "0.5.0", "kind": "example.com/gpu", "devices": [
 {"name": "GPU-00000000-dead-beef-0000-000000000000", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}]}
J
