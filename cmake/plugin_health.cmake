# src/plugin: health, MIG/sharing resources, preferred allocation: unit tests, end-to-end tests, benchmarks.
gpulet_unit_test(plugin_resources tests/unit/test_resources.c)
gpulet_unit_test(plugin_alloc tests/unit/test_alloc.c)
gpulet_unit_test(plugin_health tests/unit/test_health.c)
add_dependencies(plugin_health fakenvml)
set_tests_properties(plugin_health PROPERTIES TIMEOUT 120)

# Benchmarks (bench/): print figures and ratios to a floor measured in the same run; no timed
# assertions. Registered as tests with few iterations only so that they keep building and running.
foreach(b bench_alloc bench_listandwatch)
  add_executable(${b} bench/${b}.c)
  target_include_directories(${b} PRIVATE tests/unit)
  target_link_libraries(${b} PRIVATE gpulet_lib)
endforeach()
add_test(NAME plugin_bench_alloc COMMAND bench_alloc 200)
add_test(NAME plugin_bench_listandwatch COMMAND bench_listandwatch 5)


# End to end through `gpulet plugin` and the python3-grpcio kubelet stand-in (tests/integration).
gpulet_script_test(plugin_health_e2e /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_health_e2e.py)
gpulet_script_test(plugin_health_xid /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_health_xid.py)
gpulet_script_test(plugin_health_rebuild /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_health_rebuild.py)
set_tests_properties(plugin_health_e2e plugin_health_xid plugin_health_rebuild PROPERTIES TIMEOUT 180)
