# CDI is on and the plugin returns CDI names (cdi-cri), but its spec file is gone from /var/run/cdi
# (a tmpfs: lost at reboot, and the plugin writes it only at start). containerd's CRI plugin cannot
# resolve the name and kubelet reports the container's creation as Failed: "failed to inject CDI
# devices: unresolvable CDI devices <name>"; the pod waits in CreateContainerError. The event maps
# onto the CDI link; the judgment of who injects is sound (CDI on), so no inject.* finding.
rm -f "$ROOT/etc/cdi/nvidia.json"
sed -i "s|CgA=|$(/usr/bin/python3 "$SCEN/../allocresp.py" cdi k8s.device-plugin.nvidia.com/gpu=GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60)|" "$ROOT/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
