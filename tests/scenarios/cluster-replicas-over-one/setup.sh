# Time-slicing with failRequestsGreaterThanOne: true and 4 replicas per GPU. The pod asks for 2
# nvidia.com/gpu: the scheduler places it (4 replicas advertised), then kubelet's admission calls
# Allocate and the plugin refuses ("maximum request size for shared resources is 1; found 2",
# internal/rm/rm.go); kubelet marks the pod Failed with UnexpectedAdmissionError, and the event says so.
