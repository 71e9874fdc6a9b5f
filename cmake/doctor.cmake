# doctor, lint, versions, probe: tests, helpers, the fake libcuda used by probe's tests.

add_executable(toml_dump tests/integration/toml_dump.c)
target_link_libraries(toml_dump PRIVATE gpulet_lib)

gpulet_unit_test(doctor_test_toml tests/unit/test_toml.c)
gpulet_script_test(doctor_toml_peers /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_toml_peers.py
                   ${CMAKE_BINARY_DIR}/toml_dump)

gpulet_unit_test(doctor_test_checkpoint tests/unit/test_checkpoint.c)
gpulet_unit_test(doctor_test_doctor tests/unit/test_doctor.c)
gpulet_unit_test(doctor_test_runtool tests/unit/test_doctor_runtool.c)
gpulet_unit_test(doctor_test_k8sobj tests/unit/test_doctor_k8sobj.c)
gpulet_unit_test(doctor_test_kubeletcfg tests/unit/test_kubeletcfg.c)
# Every scenario under tests/scenarios: a fake node + expected findings, run through build/gpulet.
gpulet_script_test(doctor_scenarios /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/scenarios/run.py)
gpulet_script_test(doctor_lint /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/lint/run.py)
gpulet_script_test(doctor_versions /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_versions.py)

# build/fakecuda/libcuda.so.1: the driver API entry points gpulet probe calls, driven by env.
add_library(fakecuda SHARED tests/fakecuda/fakecuda.c)
set_target_properties(fakecuda PROPERTIES OUTPUT_NAME cuda PREFIX lib SUFFIX .so.1
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fakecuda C_VISIBILITY_PRESET hidden)
gpulet_script_test(doctor_probe /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_probe.py
                   ${CMAKE_BINARY_DIR}/fakecuda/libcuda.so.1)
# Benchmark (prints figures and a ratio to the exec floor, no timed assertion); the test only
# checks that it runs: /usr/bin/python3 bench/bench_doctor.py [RUNS]
gpulet_script_test(doctor_bench /usr/bin/python3 ${CMAKE_SOURCE_DIR}/bench/bench_doctor.py 3)
add_executable(k8s_dump tests/integration/k8s_dump.c)
target_link_libraries(k8s_dump PRIVATE gpulet_lib)
gpulet_script_test(doctor_k8sobj_peers /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_k8sobj_peers.py
                   ${CMAKE_BINARY_DIR}/k8s_dump)
gpulet_script_test(doctor_usage /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/scenarios/test_usage.py)
gpulet_script_test(doctor_live_sockets /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/scenarios/test_live_sockets.py)
