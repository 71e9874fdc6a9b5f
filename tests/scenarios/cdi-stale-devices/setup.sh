# a spec from before a GPU swap: names a device node and a GPU UUID that are gone
cat > "$ROOT/etc/cdi/old-gpu.json" <<'J'
{"cdiVersion": "0.5.0", "kind": "example.com/gpu", "devices": [
 {"name": "GPU-00000000-dead-beef-0000-000000000000", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia7"}]}}]}
J
