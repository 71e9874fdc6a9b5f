# The driver was installed from a package set without its firmware package: the module loads and probes
# the GPUs, but RmInitAdapter fails on the one whose GSP firmware it must load, which nvidia-smi then
# does not list (open-gpu-kernel-modules issues 263, 943). NVML lists the other seven.
rm -f "$ROOT/lib/firmware/nvidia/550.54.15/gsp_ga10x.bin"
. "$NODE_LIB"
drop_gpus 1
