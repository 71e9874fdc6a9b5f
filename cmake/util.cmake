# src/util: the enum <-> string table idiom.
gpulet_unit_test(util_enumtab tests/unit/test_enumtab.c)
gpulet_unit_test(util_log tests/unit/test_log.c)
