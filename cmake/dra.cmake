# gpulet dra (issue 33): kubelet's DRA plugin API, its health API and plugin registration, written in
# proto/ from the upstream field lists. protoc-c gets messages-only copies (the service blocks, which
# end each file, are dropped: gpulet serves them with its own C-core code, kube/gsrv.c); the Python
# kubelet stand-in gets the full files, v1beta1 included (docs/reference/dra.md §3).
find_program(PROTOC_C protoc-c REQUIRED)
find_program(PROTOC protoc REQUIRED)
set(DRA_GEN ${CMAKE_BINARY_DIR}/gen)
file(MAKE_DIRECTORY ${DRA_GEN}/proto ${DRA_GEN}/py)
foreach(_p dra dra_health pluginregistration)
  add_custom_command(
    OUTPUT ${DRA_GEN}/${_p}.pb-c.c ${DRA_GEN}/${_p}.pb-c.h
    COMMAND sed "/^service /,/^}/d" ${CMAKE_SOURCE_DIR}/proto/${_p}.proto > ${DRA_GEN}/proto/${_p}.proto
    COMMAND ${PROTOC_C} -I${DRA_GEN}/proto --c_out=${DRA_GEN} ${DRA_GEN}/proto/${_p}.proto
    DEPENDS ${CMAKE_SOURCE_DIR}/proto/${_p}.proto
    COMMENT "protoc-c proto/${_p}.proto (messages only)"
    VERBATIM)
  set_source_files_properties(${DRA_GEN}/${_p}.pb-c.c PROPERTIES COMPILE_OPTIONS "-w")
  target_sources(gpulet_lib PRIVATE ${DRA_GEN}/${_p}.pb-c.c ${DRA_GEN}/${_p}.pb-c.h)
endforeach()
# v1beta1 is dra.proto under another package (docs/reference/dra.md §3.1): made here, not kept twice
add_custom_command(
  OUTPUT ${DRA_GEN}/proto/dra_v1beta1.proto
  COMMAND sed "s/^package k8s.io.kubelet.pkg.apis.dra.v1;/package k8s.io.kubelet.pkg.apis.dra.v1beta1;/"
          ${CMAKE_SOURCE_DIR}/proto/dra.proto > ${DRA_GEN}/proto/dra_v1beta1.proto
  DEPENDS ${CMAKE_SOURCE_DIR}/proto/dra.proto
  VERBATIM)
set(DRA_PY_OUT ${DRA_GEN}/py/dra_pb2.py ${DRA_GEN}/py/dra_v1beta1_pb2.py ${DRA_GEN}/py/dra_health_pb2.py
               ${DRA_GEN}/py/pluginregistration_pb2.py)
add_custom_command(
  OUTPUT ${DRA_PY_OUT}
  COMMAND ${PROTOC} -I${CMAKE_SOURCE_DIR}/proto --python_out=${DRA_GEN}/py ${CMAKE_SOURCE_DIR}/proto/dra.proto
          ${CMAKE_SOURCE_DIR}/proto/dra_health.proto ${CMAKE_SOURCE_DIR}/proto/pluginregistration.proto
  COMMAND ${PROTOC} -I${DRA_GEN}/proto --python_out=${DRA_GEN}/py ${DRA_GEN}/proto/dra_v1beta1.proto
  DEPENDS ${CMAKE_SOURCE_DIR}/proto/dra.proto ${CMAKE_SOURCE_DIR}/proto/dra_health.proto
          ${CMAKE_SOURCE_DIR}/proto/pluginregistration.proto ${DRA_GEN}/proto/dra_v1beta1.proto
  COMMENT "protoc --python_out proto/dra.proto (v1 and v1beta1), dra_health.proto, pluginregistration.proto")
add_custom_target(dra_pyproto ALL DEPENDS ${DRA_PY_OUT})

# The pure parts against JSON fixtures (tests/fixtures/dra/), the prepare state machine on a fake node,
# and the real wire: the daemon in-process, a Python (grpcio) kubelet stand-in calling its sockets.
gpulet_unit_test(dra_unit tests/unit/test_dra.c)
gpulet_unit_test(dra_prepare_unit tests/unit/test_dra_prepare.c)
gpulet_unit_test(dra_pool_unit tests/unit/test_dra_pool.c)
# the MPS case runs NVIDIA's real nvidia-cuda-mps-control (realdriver) and needs root (a tmpfs, a mount namespace)
set_tests_properties(dra_prepare_unit PROPERTIES TIMEOUT 180 FIXTURES_REQUIRED realdriver ENVIRONMENT
  "GPULET_SRC=${CMAKE_SOURCE_DIR};GPULET_BUILD=${CMAKE_BINARY_DIR};FAKE_NVML_LIB=${CMAKE_BINARY_DIR}/fakenvml/libnvidia-ml.so.1;GPULET_REALDRIVER=${CMAKE_BINARY_DIR}/realdriver")
file(GLOB DRA_PY_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/integration/test_dra*.py)
foreach(t ${DRA_PY_TESTS})
  get_filename_component(_n ${t} NAME_WE)
  string(REGEX REPLACE "^test_" "" _n ${_n})
  gpulet_script_test(${_n} /usr/bin/python3 ${t})
  set_tests_properties(${_n} PROPERTIES TIMEOUT 120)
endforeach()
# tests/k8s/test_k8s_dra_sharing.py runs NVIDIA's real nvidia-cuda-mps-control too (the k8s tests are
# made in k8s.cmake, after this file: the property is set once they exist)
cmake_language(DEFER CALL set_property TEST k8s_dra_sharing APPEND PROPERTY FIXTURES_REQUIRED realdriver)
