# CDI generate / list / validate, driver discovery and ld.so.cache: tests and benchmark.
gpulet_unit_test(cdi_unit tests/unit/test_cdi.c)
# generate: refusals (roots, control nodes, libcuda, libnvidia-ml), partial-spec warnings, --strict
gpulet_unit_test(cdi_generate_unit tests/unit/test_cdi_generate.c)
# validate as the CDI Go library reads: v prefix per runtime, key case, Go types; conflicts before a write
gpulet_unit_test(cdi_validate_unit tests/unit/test_cdi_validate.c)
gpulet_script_test(cdi_golden /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_cdi_golden.py)
gpulet_script_test(cdi_schema /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_cdi_schema.py)
# podman + runc as the CDI consumer; needs root (mknod, unshare -m), as CI runs.
gpulet_script_test(cdi_podman /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_cdi_podman.py)
set_tests_properties(cdi_podman PROPERTIES LABELS "no-asan" RUN_SERIAL TRUE)
gpulet_script_test(cdi_golib /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_cdi_golib.py)
set_tests_properties(cdi_golib PROPERTIES LABELS "no-asan")
# Benchmark (not a test): cmake --build build --target bench_cdi && bench/bench_cdi.py build
add_executable(bench_cdi EXCLUDE_FROM_ALL bench/bench_cdi.c)
target_link_libraries(bench_cdi PRIVATE gpulet_lib)
# Parsers of untrusted input: seeded mutations under CTest (ASan in CI); libFuzzer with GPULET_FUZZ.
gpulet_unit_test(cdi_fuzz_smoke tests/unit/test_cdi_fuzz.c)
if(GPULET_FUZZ)
  add_executable(fuzz_cdi tests/unit/test_cdi_fuzz.c)
  target_compile_definitions(fuzz_cdi PRIVATE GPULET_LIBFUZZER)
  target_compile_options(fuzz_cdi PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_cdi PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_cdi PRIVATE gpulet_lib)
endif()
gpulet_script_test(cdi_cli /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_cdi_cli.py)
# nvidia-ctk 1.20's `cdi generate` command line and spec contents (docs/reference/cdi.md §7.1.1)
gpulet_script_test(cdi_ctk_options /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_cdi_ctk_options.py)
