# Fuzz targets for every parser of outside input (issue 8), tests/fuzz/fuzz_<target>.c.
#  - every build: fuzz_replay_<target> = the target + tests/fuzz/replay.c (no libFuzzer), and the
#    CTest reliability_fuzz_corpus replays tests/fuzz/corpus/<target>/* through each one, so a
#    committed reproducer fails the suite (under ASan+UBSan in the asan tree) until it is fixed.
#  - CC=clang cmake -S . -B build-fuzz -DGPULET_FUZZ=ON: fuzz_<target> linked with libFuzzer,
#    ASan and UBSan; gpulet_lib gets the coverage instrumentation. tests/fuzz/run.sh runs them.
set(GPULET_FUZZ_TARGETS config duration toml cdi checkpoint xid migminors ldcache kubeletcfg meminfo ocistate vgpu collectors hpcjobs cgroupuid podmeta operator
                        webconfig rtcmdline argv kapiwatch kubeconfig mountinfo draclaim quantity klog)
# The Pod/workload YAML loader of `gpulet lint` (src/kube/k8sobj.h) is fuzzed once it exists.
if(EXISTS ${CMAKE_SOURCE_DIR}/src/kube/k8sobj.h)
  list(APPEND GPULET_FUZZ_TARGETS podyaml)
  list(APPEND GPULET_FUZZ_TARGETS k8sevents allocresp podres)
endif()

foreach(t ${GPULET_FUZZ_TARGETS})
  add_executable(fuzz_replay_${t} tests/fuzz/fuzz_${t}.c tests/fuzz/replay.c)
  target_link_libraries(fuzz_replay_${t} PRIVATE gpulet_lib)
  set_target_properties(fuzz_replay_${t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
  if(GPULET_FUZZ) # the replays of the fuzz tree: same sanitizers, no libFuzzer (to re-check one input)
    target_compile_options(fuzz_replay_${t} PRIVATE -Wno-unknown-warning-option -fsanitize=address,undefined
                                                    -fno-sanitize-recover=undefined)
  endif()
endforeach()

gpulet_script_test(reliability_fuzz_corpus ${CMAKE_SOURCE_DIR}/tests/fuzz/replay-all.sh ${GPULET_FUZZ_TARGETS})

if(GPULET_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "GPULET_FUZZ needs clang: CC=clang cmake -S . -B build-fuzz -DGPULET_FUZZ=ON")
  endif()
  set(_fuzz_san -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  # The -Werror gate is the GCC build; clang's extra warnings are reported to the owners (BUGS-*.md)
  # instead of stopping the fuzzers. The top-level flags also carry GCC's -Wno-format-truncation.
  target_compile_options(gpulet_lib PRIVATE -Wno-error -Wno-unknown-warning-option -fsanitize=fuzzer-no-link
                                            ${_fuzz_san})
  # whatever links the instrumented library needs the sanitizer runtimes
  target_link_options(gpulet_lib INTERFACE -fsanitize=address,undefined)
  add_custom_target(fuzz_all)
  # target rfuzz_<t>, file build-fuzz/fuzz/fuzz_<t> (cdi.cmake has its own target named fuzz_cdi)
  foreach(t ${GPULET_FUZZ_TARGETS})
    add_executable(rfuzz_${t} tests/fuzz/fuzz_${t}.c)
    target_compile_options(rfuzz_${t} PRIVATE -Wno-unknown-warning-option -fsanitize=fuzzer ${_fuzz_san})
    target_link_options(rfuzz_${t} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(rfuzz_${t} PRIVATE gpulet_lib)
    set_target_properties(rfuzz_${t} PROPERTIES OUTPUT_NAME fuzz_${t} RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
    add_dependencies(fuzz_all rfuzz_${t})
  endforeach()
endif()
