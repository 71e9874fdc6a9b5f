# CDI generate / list / validate, driver discovery and ld.so.cache: tests and benchmark.
gpulet_unit_test(cdi_ldcache tests/unit/test_ldcache.c)
gpulet_unit_test(cdi_driver tests/unit/test_driver.c)
gpulet_unit_test(cdi_core tests/unit/test_cdi.c)
