# The real failure after a driver upgrade without reboot: the 535 module still runs, the 550 user-space
# driver is on disk, and NVML itself refuses to start (nvmlInit: LIB_RM_VERSION_MISMATCH, "Driver/library
# version mismatch"), so NVML cannot say its version: the library's file name and the driver's "NVRM: API
# mismatch" lines in the kernel log do (src/nvidia/arch/nvalloc/unix/src/osapi.c).
