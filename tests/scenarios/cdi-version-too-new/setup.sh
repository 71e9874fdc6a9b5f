# containerd 1.7.0-1.7.12 vendors CDI 0.5.x: a 0.6.0 spec is silently ignored
sed -i 's/Version: 1.7.24~ds1-1/Version: 1.7.2-1/' "$ROOT/var/lib/dpkg/status"
sed -i 's/"cdiVersion": "0.5.0"/"cdiVersion": "0.6.0"/' "$ROOT/etc/cdi/nvidia.json"
