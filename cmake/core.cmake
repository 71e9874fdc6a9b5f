# Foundation: NVML loader, node model, devices verb.
gpulet_unit_test(core_nvml tests/unit/test_nvml.c)
gpulet_unit_test(core_migminors tests/unit/test_migminors.c)
