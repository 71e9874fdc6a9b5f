# A T4 (page retirement, not row remapping) retired a page after a double-bit error: the retirement
# waits for the driver to reload. NVML says so; the kernel log that had the XID 48 is gone.
