# The command line: every verb's --help lists exactly the options it accepts (src/cmd/options.c).
gpulet_script_test(cmd_help /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_help.py)
