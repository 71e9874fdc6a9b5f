# doctor, lint, versions, probe: tests, helpers, the fake libcuda used by probe's tests.

add_executable(toml_dump tests/integration/toml_dump.c)
target_link_libraries(toml_dump PRIVATE gpulet_lib)

gpulet_unit_test(doctor_test_toml tests/unit/test_toml.c)
gpulet_script_test(doctor_toml_peers /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_toml_peers.py
                   ${CMAKE_BINARY_DIR}/toml_dump)
