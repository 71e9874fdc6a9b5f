# Healthy but unusual: the events still list FailedScheduling (Insufficient nvidia.com/gpu) and a
# FailedCreatePodSandBox from an hour ago for pod train, but train now Runs and is Ready: events
# outlive their cause (kube-apiserver keeps them for --event-ttl, 1h). History is not a finding.
