# A Job's pod finished (phase Succeeded, not deleted): kubelet's checkpoint still lists its GPU, as it
# does until the next Allocate. That pod is no longer active for kubelet (GetActivePods leaves out pods
# in a terminal phase) and its device manager frees what it holds when the next pod asks
# (UpdateAllocatedDevices keeps the active pods' devices only); the scheduler does not count it either.
# A node full of finished Jobs is healthy: no allocation is stuck. (Seen on the real node of tests/k8s:
# a Succeeded pod's entry stays in the checkpoint, and the next pod gets that GPU.)
:
