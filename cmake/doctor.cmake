# doctor, lint, versions, probe: tests, helpers, the fake libcuda used by probe's tests.



gpulet_unit_test(doctor_unit tests/unit/test_doctor.c)
gpulet_unit_test(doctor_runtool tests/unit/test_doctor_runtool.c)
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
gpulet_script_test(doctor_usage /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/scenarios/test_usage.py)
gpulet_script_test(doctor_live_sockets /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/scenarios/test_live_sockets.py)
# The doctor as a DaemonSet (--serve-metrics) on healthy and broken nodes; promtool judges metrics and alerts.
gpulet_script_test(doctor_serve /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/scenarios/test_serve.py)
