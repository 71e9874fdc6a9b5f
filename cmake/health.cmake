# Health, MIG/sharing resources, preferred allocation (issue 5): unit tests and benchmarks.
gpulet_unit_test(health_xid tests/unit/test_xid.c)
gpulet_unit_test(health_resources tests/unit/test_resources.c)
gpulet_unit_test(health_alloc tests/unit/test_alloc.c)
gpulet_unit_test(health_watcher tests/unit/test_health.c)
add_dependencies(health_watcher fakenvml)
set_tests_properties(health_watcher PROPERTIES TIMEOUT 120)
