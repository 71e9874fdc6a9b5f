# src/util: the enum <-> string table idiom.
gpulet_unit_test(util_enumtab tests/unit/test_enumtab.c)
# src/util/opt: option value parsers (Go's boolean words, durations); util/optspec: the option engine.
gpulet_unit_test(util_opt tests/unit/test_opt.c)
gpulet_unit_test(util_optspec tests/unit/test_optspec.c)
gpulet_unit_test(util_log tests/unit/test_log.c)
# src/util/hostpaths: the one host-path rule (root, driver root, dev root, container driver root).
gpulet_unit_test(util_hostpaths tests/unit/test_hostpaths.c)
# The same lines read back by go-logfmt, the decoder Go log pipelines use (Debian's Go package).
gpulet_script_test(util_log_golang /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_logfmt_go.py)
set_tests_properties(util_log_golang PROPERTIES LABELS "no-asan")
