# NVIDIA's own tools as oracles (tests/oracles, docs/reference/oracles.md): built from their Go
# modules into ~/.cache/gpulet-peers by tests/lib/gopeers.py, run beside gpulet on the same fake
# nodes; every difference is argued in docs/reference/oracles.md or the test fails.
# no-asan: the Go tools dlopen the fake NVML, which the sanitizer build instruments.
gpulet_script_test(oracle_cdi /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/oracles/test_cdi_oracle.py)
set_tests_properties(oracle_cdi PROPERTIES LABELS no-asan TIMEOUT 1800)
gpulet_script_test(oracle_labels /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/oracles/test_labels_oracle.py)
set_tests_properties(oracle_labels PROPERTIES LABELS no-asan TIMEOUT 1800)
gpulet_script_test(oracle_plugin /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/oracles/test_plugin_oracle.py)
set_tests_properties(oracle_plugin PROPERTIES LABELS no-asan TIMEOUT 1800)
# nvidia-cdi-hook against gpulet's cdi-hook in podman + runc containers (the cdihook_podman harness):
# NVIDIA's real driver files, so the realdriver fixture; 77 only where podman cannot run a container.
gpulet_script_test(oracle_hooks /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/oracles/test_hooks_oracle.py)
set_tests_properties(oracle_hooks PROPERTIES LABELS no-asan RUN_SERIAL TRUE FIXTURES_REQUIRED realdriver
                     SKIP_RETURN_CODE 77 TIMEOUT 1800)
set_property(TEST oracle_hooks APPEND PROPERTY ENVIRONMENT "CC=${CMAKE_C_COMPILER}")
