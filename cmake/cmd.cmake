# The command line: every verb's --help lists exactly the options it accepts (src/cmd/options.c).
gpulet_script_test(cmd_help /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_help.py)
# every verb's every option probed: 370-450 s under the sanitizers on 2 loaded cores
set_tests_properties(cmd_help PROPERTIES TIMEOUT 1500)
# gpulet devices: every fixture, cross-checked against the fixture file by an independent reading.
gpulet_script_test(cmd_devices /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_devices.py)
# Go-style single-dash long flags (src/util/argv.c), under every verb's option parsing.
gpulet_unit_test(cmd_argv tests/unit/test_argv.c)
# Lean start-up: what build/gpulet and its serving modules load, and the modules' search and refusal.
gpulet_script_test(cmd_lean /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_lean.py)
set_property(TEST cmd_lean APPEND PROPERTY ENVIRONMENT "CC=${CMAKE_C_COMPILER}")
set_tests_properties(cmd_lean PROPERTIES LABELS "no-asan") # the sanitizer build is not lean (CMakeLists.txt)
# Links named after the upstream programs (nvidia-device-plugin, gpu-feature-discovery, ...).
gpulet_script_test(cmd_argv0 /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_argv0.py)
set_tests_properties(cmd_argv0 PROPERTIES TIMEOUT 120)
# Benchmark (prints ratios to /bin/true, asserts nothing); registered with 3 runs so that it keeps
# working: /usr/bin/python3 bench/bench_startup.py [RUNS] [OTHER_GPULET]
gpulet_script_test(cmd_bench_startup /usr/bin/python3 ${CMAKE_SOURCE_DIR}/bench/bench_startup.py 3)
# build/gpulet-probe in a podman container of a bare glibc root, CDI injecting the device nodes and the
# real libcuda.so.1 (needs root for mknod/unshare, as cdi_podman; the realdriver files, as realdriver_*).
gpulet_script_test(cmd_probe_podman /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_probe_podman.py
                   ${CMAKE_BINARY_DIR}/realdriver/root-plain)
set_tests_properties(cmd_probe_podman PROPERTIES LABELS "no-asan" RUN_SERIAL TRUE FIXTURES_REQUIRED realdriver)
# Benchmark (prints, asserts nothing): the plugin's PSS from a private copy of its libraries, alone and
# next to the exporter and labels; registered with few calls so that it keeps working.
# /usr/bin/python3 bench/bench_pss.py [ALLOCATES] [OTHER_GPULET]
gpulet_script_test(cmd_bench_pss /usr/bin/python3 ${CMAKE_SOURCE_DIR}/bench/bench_pss.py 20)
set_tests_properties(cmd_bench_pss PROPERTIES TIMEOUT 120)
