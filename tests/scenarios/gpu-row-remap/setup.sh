# Memory repair that only NVML still shows (the kernel log rotated): GPU 1 has a row remap waiting for a
# reset, GPU 2 ran out of spare rows and failed to remap (it needs service).
