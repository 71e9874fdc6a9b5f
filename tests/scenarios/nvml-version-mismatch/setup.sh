# driver upgraded on disk (user-space 550.54.15) but the old kernel module still runs (docs/reference/field-guide.md §4.4)
sed -i 's/ 550\.54\.15 / 535.161.08 /' "$ROOT/proc/driver/nvidia/version"
