# pods/ is read below kubelet's --root-dir: the pod is gone from there
rm -rf "$ROOT/data/kubelet/pods/$POD_UID"
