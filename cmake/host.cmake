# src/host: the ld.so.cache reader and driver discovery.
gpulet_unit_test(host_ldcache tests/unit/test_ldcache.c)
gpulet_unit_test(host_driver tests/unit/test_driver.c)
