# src/util: the enum <-> string table idiom.
gpulet_unit_test(util_enumtab tests/unit/test_enumtab.c)
