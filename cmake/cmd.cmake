# The command line: every verb's --help lists exactly the options it accepts (src/cmd/options.c).
gpulet_script_test(cmd_help /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_help.py)
# gpulet devices: every fixture, cross-checked against the fixture file by an independent reading.
gpulet_script_test(cmd_devices /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_devices.py)
# Go-style single-dash long flags (src/util/argv.c), under every verb's option parsing.
gpulet_unit_test(cmd_argv tests/unit/test_argv.c)
