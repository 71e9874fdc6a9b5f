printf "{\"cdiVersion\": \"0.5.0\", \"kind\": \"nvidia.com/gpu\", \"devices\": [{\"name\": \"bad name!\", \"containerEdits\": {}}]}\n" > "$ROOT/etc/cdi/broken.json"
