# src/parse: the one YAML reader (pinned to sigs.k8s.io/yaml's typing) and TOML (judged by tomllib and
# `containerd config dump` through build/toml_dump).
gpulet_unit_test(parse_yaml tests/unit/test_yaml.c)
add_executable(toml_dump tests/integration/toml_dump.c)
target_link_libraries(toml_dump PRIVATE gpulet_lib)
gpulet_unit_test(parse_toml tests/unit/test_toml.c)
gpulet_script_test(parse_toml_peers /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_toml_peers.py
                   ${CMAKE_BINARY_DIR}/toml_dump)
