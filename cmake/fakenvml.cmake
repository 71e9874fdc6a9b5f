# Fake NVML (tests/fakenvml): build/fakenvml/libnvidia-ml.so.1 answers NVML calls from a JSON node
# fixture (FAKE_NVML_FIXTURE); old/ and broken/ variants exercise the loader's symbol checks.
# The export list of each variant is printed from NVML_SYMBOLS by gen_exports, so it follows the ABI.

add_executable(fakenvml_gen_exports tests/fakenvml/gen_exports.c)
target_include_directories(fakenvml_gen_exports PRIVATE src)

# fakenvml_variant(TARGET MODE OUTDIR)
function(fakenvml_variant target mode outdir)
  set(map ${CMAKE_BINARY_DIR}/fakenvml/exports-${mode}.map)
  add_custom_command(OUTPUT ${map}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/fakenvml
    COMMAND fakenvml_gen_exports ${mode} > ${map}
    DEPENDS fakenvml_gen_exports
    COMMENT "fake NVML export list (${mode})")
  add_custom_target(${target}_map DEPENDS ${map})
  # nvml.c gives the return-code name table (fixture error names); err.c/enumtab.c/fileio.c are its deps.
  add_library(${target} SHARED tests/fakenvml/fakenvml.c src/nvml/nvml.c src/util/enumtab.c src/util/err.c
              src/util/fileio.c)
  add_dependencies(${target} ${target}_map)
  target_include_directories(${target} PRIVATE src)
  target_link_libraries(${target} PRIVATE PkgConfig::JANSSON ${CMAKE_DL_LIBS} pthread)
  target_link_options(${target} PRIVATE -Wl,--version-script=${map} -Wl,-soname,libnvidia-ml.so.1)
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME nvidia-ml PREFIX lib SUFFIX .so.1
    LIBRARY_OUTPUT_DIRECTORY ${outdir}
    C_VISIBILITY_PRESET hidden
    LINK_DEPENDS ${map})
endfunction()

fakenvml_variant(fakenvml full ${CMAKE_BINARY_DIR}/fakenvml)
fakenvml_variant(fakenvml_old old ${CMAKE_BINARY_DIR}/fakenvml/old)
fakenvml_variant(fakenvml_broken broken ${CMAKE_BINARY_DIR}/fakenvml/broken)

gpulet_unit_test(fakenvml_selftest tests/fakenvml/selftest.c)
target_link_libraries(fakenvml_selftest PRIVATE pthread)
add_dependencies(fakenvml_selftest fakenvml fakenvml_old fakenvml_broken)

gpulet_script_test(fakenvml_mkroot tests/fakenvml/test-mkroot.sh)

# Every fixture against tests/fixtures/fixture.schema.json (python3-jsonschema) and its own consistency.
gpulet_script_test(fakenvml_fixtures /usr/bin/python3 -W ignore tests/fakenvml/check-fixtures.py)

# tests/lib/fakenvml.py (fixture edits and events for Python tests), checked through ctypes.
# no-asan: Python cannot load the ASan-instrumented library.
gpulet_script_test(fakenvml_pyhelper /usr/bin/python3 tests/fakenvml/test-pyhelper.py)
set_tests_properties(fakenvml_pyhelper PROPERTIES LABELS no-asan)
