# `make demo` (tests/demo.py): the same story on every run, its commands to try working as printed, and
# `make install` (into a temp DESTDIR). no-asan: `make install` installs the plain build's binaries.
gpulet_script_test(demo_story /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_demo.py)
set_tests_properties(demo_story PROPERTIES LABELS no-asan TIMEOUT 300)
