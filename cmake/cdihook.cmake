# gpulet cdi-hook: the OCI hook CDI specs name (src/cdihook/, src/cmd/verb_cdihook.c).
# Path confinement and the actions on temp rootfs trees; the OCI state reader's fuzz target is in
# fuzz.cmake's list (tests/fuzz/fuzz_ocistate.c).
gpulet_unit_test(cdihook_unit tests/unit/test_cdihook.c)
# podman + runc run a glibc container whose library layout differs from the driver root's, both
# ways: dlopen("libcuda.so.1") works with the hooks, fails without. Needs root, like cdi_podman.
gpulet_script_test(cdihook_podman /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_cdi_hook_podman.py)
set_tests_properties(cdihook_podman PROPERTIES LABELS "no-asan" RUN_SERIAL TRUE FIXTURES_REQUIRED realdriver
                     SKIP_RETURN_CODE 77)
set_property(TEST cdihook_podman APPEND PROPERTY ENVIRONMENT "CC=${CMAKE_C_COMPILER}")
# the plugin's CDI upkeep writes the same hooks from --nvidia-cdi-hook-path / --cdi-disable-hooks
gpulet_script_test(cdihook_plugin /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_cdi_hook_plugin.py)
# The guards of issue 20 (rootfs identity, relative ldconfig, temp names, swapped components, the
# isolation seen from inside by build/cdihook_jailprobe, a static stand-in for ldconfig).
add_executable(cdihook_jailprobe tests/unit/jailprobe.c)
target_compile_options(cdihook_jailprobe PRIVATE -fno-sanitize=all)
target_link_options(cdihook_jailprobe PRIVATE -fno-sanitize=all -static)
gpulet_unit_test(cdihook_guards tests/unit/test_cdihook_guards.c)
target_compile_definitions(cdihook_guards PRIVATE JAILPROBE="$<TARGET_FILE:cdihook_jailprobe>")
add_dependencies(cdihook_guards cdihook_jailprobe)
target_link_libraries(cdihook_guards PRIVATE pthread)
# The jail's fences (issue 30: kernel file systems found in mountinfo and detached, the ptrace
# check failing by Landlock or a user namespace, the seccomp filter), judged by the kernel.
gpulet_unit_test(cdihook_jail tests/unit/test_cdihook_jail.c)
target_compile_definitions(cdihook_jail PRIVATE JAILPROBE="$<TARGET_FILE:cdihook_jailprobe>")
add_dependencies(cdihook_jail cdihook_jailprobe)
