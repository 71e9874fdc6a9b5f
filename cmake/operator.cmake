# Running as the operands of NVIDIA's manifests (docs/reference/operator.md): the GPU Operator's
# device-plugin entrypoint read by src/plugin/operator.c; the image's entrypoint and the Operator's
# pods are tested in test_image.py and tests/k8s/test_k8s_operator.py.
gpulet_unit_test(plugin_operator tests/unit/test_operator.c)
# `make image` is built first: 77 only where podman cannot run or the Debian archive is out of reach
set_tests_properties(k8s_operator PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1500)
