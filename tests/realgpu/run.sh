#!/bin/bash
# gpulet against the real NVML of a real GPU node, next to nvidia-smi's answers; everything it sees
# goes to $OUT/run.txt (default /tmp/gpulet-realgpu), with the JSON, YAML and metrics it wrote beside it.
# Read-only on the host except /var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json (the plugin's spec).
D=$(cd "$(dirname "$0")" && pwd)
L="$D/ld-linux-x86-64.so.2 --library-path $D"
G="$L $D/gpulet"
O=${OUT:-/tmp/gpulet-realgpu}
mkdir -p "$O"
step() { printf '\n=== %s\n' "$*"; }
{
	step host
	uname -a; head -3 /etc/os-release; nvidia-smi; nvidia-smi -L; ls -l /dev/nvidia* /dev/nvidia-caps
	cat /proc/driver/nvidia/version /proc/driver/nvidia/params
	ldconfig -p | grep -E 'nvidia-ml|libcuda\.so'; ls -l /lib/libcuda* /usr/local/nvidia/lib64/libcuda* 2>&1
	command -v nvidia-ctk nvidia-cdi-hook dcgm-exporter containerd kubelet
	nvidia-smi --query-gpu=index,uuid,name,pci.bus_id,serial,vbios_version,memory.total,memory.used,driver_version,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.mem,pstate,ecc.mode.current,mig.mode.current,compute_cap --format=csv
	step version; $G --version
	step devices; $G devices; $G devices --json >"$O/devices.json"; echo "rc=$?"
	step cdi generate; $G cdi generate --strict -o "$O/nvidia.yaml"; echo "rc=$?"; $G cdi validate "$O/nvidia.yaml"; echo "validate rc=$?"
	command -v nvidia-ctk >/dev/null && nvidia-ctk cdi generate --output "$O/nvidia-ctk.yaml"
	step labels; $G labels --oneshot --output - --no-timestamp | tee "$O/labels.txt"
	step versions; $G versions
	step doctor; $G doctor; echo "rc=$?"; $G doctor --json >"$O/doctor.json"
	step probe; $L "$D/gpulet-probe"; echo "rc=$?"
	step exporter
	$G exporter --address 127.0.0.1:19400 >"$O/exporter.log" 2>&1 &
	ep=$!
	for _ in $(seq 1 40); do
		sleep 0.5
		$L "$D/curl" -sf http://127.0.0.1:19400/metrics -o "$O/metrics.txt" && grep -q '^gpulet_exporter_ready 1' "$O/metrics.txt" && break
	done
	sleep 6
	$L "$D/curl" -s http://127.0.0.1:19400/metrics -o "$O/metrics.txt"
	for _ in 1 2 3 4 5; do $L "$D/curl" -s -o /dev/null -w 'scrape %{time_total}s %{size_download}B\n' http://127.0.0.1:19400/metrics; done
	grep -E '^(DCGM|gpulet_exporter_field_unavailable)' "$O/metrics.txt"
	kill $ep; wait $ep; echo "exporter rc=$?"; cat "$O/exporter.log"
	step exporter with every field gpulet samples
	$G exporter --address 127.0.0.1:19401 -f "$D/all-fields.csv" >"$O/exporter-all.log" 2>&1 &
	ep=$!
	sleep 8
	$L "$D/curl" -s http://127.0.0.1:19401/metrics -o "$O/metrics-all.txt"
	grep -E '^(DCGM|gpulet_exporter_field_unavailable)' "$O/metrics-all.txt"
	kill $ep; wait $ep; cat "$O/exporter-all.log"
	step plugin
	mkdir -p "$O/dp"
	timeout -s TERM 12 $G plugin --kubelet-socket= --device-plugin-path "$O/dp" --device-list-strategy=cdi-cri; echo "plugin rc=$? (124: stopped by the timeout, as meant)"
	step mig; nvidia-smi mig -lgip
} >"$O/run.txt" 2>&1
tail -c 8000 "$O/run.txt"
