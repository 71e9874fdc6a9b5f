# Cross build for arm64 with Debian's cross toolchain (gcc-aarch64-linux-gnu) against the Debian 12 root
# cmake/cross/sysroot.sh makes (GPULET_SYSROOT); tests and the build's generators that run a target run
# under qemu-aarch64-static -L GPULET_SYSROOT (Debian's qemu-user-static; no binfmt needed).
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/cross/aarch64.cmake -DGPULET_SYSROOT=$(cmake/cross/sysroot.sh arm64)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES GPULET_SYSROOT) # the compiler checks' projects too
if(NOT GPULET_SYSROOT)
  message(FATAL_ERROR "GPULET_SYSROOT: give the root cmake/cross/sysroot.sh arm64 prints")
endif()
set(CMAKE_SYSROOT ${GPULET_SYSROOT})
set(CMAKE_FIND_ROOT_PATH ${GPULET_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER) # protoc, protoc-c: the build machine's
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config reads the root's .pc files and prefixes their paths with it
set(ENV{PKG_CONFIG_LIBDIR} ${GPULET_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${GPULET_SYSROOT}/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_SYSROOT_DIR} ${GPULET_SYSROOT})
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L ${GPULET_SYSROOT})
