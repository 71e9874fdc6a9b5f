# Healthy but unusual: the device plugin's helm chart installed as release "nvdp": every pod name
# starts with the release's fullname (nvdp-nvidia-device-plugin-...), and the plugin, GFD and the MPS
# control daemon all carry the same label app.kubernetes.io/name: nvidia-device-plugin
# (templates/_helpers.tpl). The GFD pod and the MPS daemon run, the plugin is healthy: nothing is
# missing, and GFD must not be mistaken for a plugin (nor the MPS daemon).
