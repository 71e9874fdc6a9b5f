sed -i "s/Version: 1.14.6-1/Version: 1.11.0-1/" "$ROOT/var/lib/dpkg/status"
