# Foundation: NVML loader, node model, devices verb.
gpulet_unit_test(core_nvml tests/unit/test_nvml.c)
gpulet_unit_test(core_migminors tests/unit/test_migminors.c)
gpulet_script_test(core_devices /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_devices.py)
gpulet_unit_test(core_node tests/unit/test_node.c)
gpulet_unit_test(util_enumtab tests/unit/test_enumtab.c)
