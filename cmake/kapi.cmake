# src/kapi: the Kubernetes API client (issue 32 item 1). libcurl is loaded with dlopen on the first
# kapi_open() (docs/HACKING.md §7), so the build needs only its headers (libcurl4-openssl-dev) and
# the soname the loader opens, read from the library the headers belong to.
pkg_check_modules(GPULET_CURL REQUIRED libcurl>=7.85.0)
find_library(GPULET_CURL_LIBRARY NAMES curl HINTS ${GPULET_CURL_LIBRARY_DIRS} REQUIRED NO_CACHE)
execute_process(COMMAND readelf -d ${GPULET_CURL_LIBRARY} OUTPUT_VARIABLE _curl_dyn RESULT_VARIABLE _curl_rc)
string(REGEX MATCH "Library soname: \\[([^]]+)\\]" _curl_soname "${_curl_dyn}")
if(NOT _curl_rc EQUAL 0 OR NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "no SONAME in ${GPULET_CURL_LIBRARY} (readelf -d)")
endif()
set(GPULET_CURL_SONAME ${CMAKE_MATCH_1})
target_include_directories(gpulet_lib PRIVATE ${GPULET_CURL_INCLUDE_DIRS})
set_property(SOURCE ${CMAKE_SOURCE_DIR}/src/kapi/curl.c APPEND PROPERTY COMPILE_DEFINITIONS
             GPULET_CURL_SONAME="${GPULET_CURL_SONAME}")
# What the image must carry because gpulet dlopens it itself (deploy/image/runtime-packages.sh reads it).
file(WRITE ${CMAKE_BINARY_DIR}/dlopen-libs.txt "${GPULET_CURL_SONAME}\n")

gpulet_unit_test(kapi_config tests/unit/test_kapi_config.c)
gpulet_unit_test(kapi_wire tests/unit/test_kapi_wire.c)

# The real API server (tests/k8s): kapi_tool drives the client, one call per command.
add_executable(kapi_tool tests/k8s/kapi_tool.c)
target_link_libraries(kapi_tool PRIVATE gpulet_lib)
