# Running as the operands of NVIDIA's manifests (docs/reference/operator.md): the GPU Operator's
# device-plugin entrypoint read by src/plugin/operator.c; the image's entrypoint and the Operator's
# pods are tested in test_image.py and tests/k8s/test_k8s_operator.py.
gpulet_unit_test(plugin_operator tests/unit/test_operator.c)
