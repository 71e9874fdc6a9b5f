printf "NVRM: garbage\n" > "$ROOT/proc/driver/nvidia/version"
