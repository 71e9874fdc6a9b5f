# Exporter, labels and the kubelet gRPC client (issue 7).
# Libraries: libgrpc (C core) + protobuf-c for gRPC, libmicrohttpd for HTTP: Debian packages, one per job.
pkg_check_modules(GPULET_EXP_GRPC REQUIRED IMPORTED_TARGET grpc)
pkg_check_modules(GPULET_EXP_PROTOBUFC REQUIRED IMPORTED_TARGET libprotobuf-c)
pkg_check_modules(GPULET_EXP_MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
# --web-config-file: GnuTLS (the TLS library libmicrohttpd uses) for certificates and client
# checks, libxcrypt's crypt_r for bcrypt; only the HTTP module's objects use them (--as-needed).
pkg_check_modules(GPULET_EXP_GNUTLS REQUIRED IMPORTED_TARGET gnutls)
pkg_check_modules(GPULET_EXP_CRYPT REQUIRED IMPORTED_TARGET libxcrypt)
find_program(PROTOC_C_EXECUTABLE protoc-c REQUIRED)

# PodResources v1 messages. protoc-c gets a messages-only copy (service block dropped), because we
# use our own C-core calls, not protobuf-c's RPC stubs (docs/reference/real-peers.md §A gotcha).
set(GPULET_GEN_DIR ${CMAKE_BINARY_DIR}/gen)
file(MAKE_DIRECTORY ${GPULET_GEN_DIR})
add_custom_command(
  OUTPUT ${GPULET_GEN_DIR}/gpulet_podres.pb-c.c ${GPULET_GEN_DIR}/gpulet_podres.pb-c.h
  COMMAND sed "/^service /,/^}/d" ${CMAKE_SOURCE_DIR}/proto/podresources.proto > ${GPULET_GEN_DIR}/gpulet_podres.proto
  COMMAND ${PROTOC_C_EXECUTABLE} --proto_path=${GPULET_GEN_DIR} --c_out=${GPULET_GEN_DIR} ${GPULET_GEN_DIR}/gpulet_podres.proto
  DEPENDS ${CMAKE_SOURCE_DIR}/proto/podresources.proto
  COMMENT "protoc-c proto/podresources.proto (messages only)"
  VERBATIM)
target_sources(gpulet_lib PRIVATE ${GPULET_GEN_DIR}/gpulet_podres.pb-c.c)
target_link_libraries(gpulet_lib PUBLIC PkgConfig::GPULET_EXP_GRPC PkgConfig::GPULET_EXP_PROTOBUFC
                                        PkgConfig::GPULET_EXP_MHD PkgConfig::GPULET_EXP_GNUTLS
                                        PkgConfig::GPULET_EXP_CRYPT)

find_program(PROMTOOL_EXECUTABLE promtool)

# Unit tests
gpulet_unit_test(kube_podres tests/unit/test_podres.c)
gpulet_unit_test(exporter_metrics tests/unit/test_metrics.c)
gpulet_unit_test(exporter_pods tests/unit/test_exporter_pods.c)
gpulet_unit_test(exporter_webconfig_unit tests/unit/test_webconfig.c)

# Black-box: the real binary on the fake NVML, judged by promtool and python3-grpcio.
gpulet_script_test(exporter_integration /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_exporter.py)

# Alert rules: promtool check rules + test rules (every alert firing and not firing).
gpulet_script_test(exporter_rules sh ${CMAKE_SOURCE_DIR}/tests/rules/run_rules_test.sh)

# Benchmarks (not tests): bench/bench_exporter.sh runs both the render and the HTTP/RSS benchmark.
add_executable(bench_exporter bench/bench_exporter.c)
target_link_libraries(bench_exporter PRIVATE gpulet_lib)

# --web-config-file: TLS (curl, Python's ssl), client certificates, basic auth, refusals.
gpulet_script_test(exporter_webconfig /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_exporter_webconfig.py)

# Issue 24: what dcgm-exporter users' queries read (XID labels and window, int64 fields, device label,
# lost GPUs, /health, -o).
gpulet_script_test(exporter_dcgm /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_exporter_dcgm.py)
# Issue 24 item 6: the chart's collectors CSV ConfigMap (real helm from build/k8stools).
gpulet_script_test(exporter_chart /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_exporter_chart.py)
set_tests_properties(exporter_chart PROPERTIES FIXTURES_REQUIRED k8stools)
