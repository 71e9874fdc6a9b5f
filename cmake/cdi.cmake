# CDI generate / list / validate, driver discovery and ld.so.cache: tests and benchmark.
gpulet_unit_test(cdi_ldcache tests/unit/test_ldcache.c)
