# The driver packages were upgraded to 550.54.15 on disk but the 535 module is still loaded (no reboot
# yet): user space is newer, loading the new module (reboot) is the fix.
sed -i 's/ 550\.54\.15 / 535.161.08 /' "$ROOT/proc/driver/nvidia/version"
