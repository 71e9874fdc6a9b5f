# arm64: gpulet cross-built with Debian's cross toolchain against a Debian 12 arm64 root (cmake/cross/:
# sysroot.sh caches the root in ~/.cache/gpulet-cross, aarch64.cmake is the toolchain file), in
# $GPULET_BUILD/arm64 (the tree the image's arm64 half is built in too), its unit tests and --help
# under Debian's qemu-user-static. Not a target of this tree: the test builds it.
if(NOT CMAKE_CROSSCOMPILING)
  gpulet_script_test(cross_arm64 /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/cross/test_arm64.py)
  set_tests_properties(cross_arm64 PROPERTIES LABELS "cross;no-asan" TIMEOUT 1800 RESOURCE_LOCK arm64tree)
endif()
