# gpulet cdi-hook: the OCI hook CDI specs name (src/cdihook/, src/cmd/cdihook.c).
# Path confinement and the actions on temp rootfs trees; the OCI state reader's fuzz target is in
# fuzz.cmake's list (tests/fuzz/fuzz_ocistate.c).
gpulet_unit_test(cdihook_unit tests/unit/test_cdihook.c)
