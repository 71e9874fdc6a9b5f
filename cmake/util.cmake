# src/util: the enum <-> string table idiom.
gpulet_unit_test(util_enumtab tests/unit/test_enumtab.c)
# src/util/opt: option value parsers (Go's boolean words).
gpulet_unit_test(util_opt tests/unit/test_opt.c)
