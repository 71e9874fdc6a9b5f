# Health, MIG/sharing resources, preferred allocation (issue 5): unit tests and benchmarks.
gpulet_unit_test(health_xid tests/unit/test_xid.c)
gpulet_unit_test(health_resources tests/unit/test_resources.c)
gpulet_unit_test(health_alloc tests/unit/test_alloc.c)
gpulet_unit_test(health_watcher tests/unit/test_health.c)
add_dependencies(health_watcher fakenvml)
set_tests_properties(health_watcher PROPERTIES TIMEOUT 120)
# The one NVML event watcher (src/nvml/watch.c) that health and the exporter share.
gpulet_unit_test(health_nvml_watch tests/unit/test_watch.c)
add_dependencies(health_nvml_watch fakenvml)
set_tests_properties(health_nvml_watch PROPERTIES TIMEOUT 60)

# Benchmarks (bench/): print figures and ratios to a floor measured in the same run; no timed
# assertions. Registered as tests with few iterations only so that they keep building and running.
foreach(b bench_alloc bench_listandwatch)
  add_executable(${b} bench/${b}.c)
  target_include_directories(${b} PRIVATE tests/unit)
  target_link_libraries(${b} PRIVATE gpulet_lib)
endforeach()
add_test(NAME health_bench_alloc COMMAND bench_alloc 200)
add_test(NAME health_bench_listandwatch COMMAND bench_listandwatch 5)


# End to end through `gpulet plugin` and the python3-grpcio kubelet stand-in (tests/integration).
gpulet_script_test(health_e2e /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_health_e2e.py)
gpulet_script_test(health_xid_e2e /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_health_xid.py)
gpulet_script_test(health_rebuild_e2e /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_health_rebuild.py)
set_tests_properties(health_e2e health_xid_e2e health_rebuild_e2e PROPERTIES TIMEOUT 180)
