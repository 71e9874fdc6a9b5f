# The fabric manager runs but the fabric never finished training on two GPUs: NVML's fabric state is
# "in progress" on one and "completed" with an error status on another. CUDA says 802 until it is done.
