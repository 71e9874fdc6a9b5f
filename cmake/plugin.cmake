# gpulet plugin: kubelet Device Plugin API v1beta1 over gRPC C-core with protobuf-c messages.
pkg_check_modules(GRPC REQUIRED IMPORTED_TARGET grpc)
pkg_check_modules(PROTOBUFC REQUIRED IMPORTED_TARGET libprotobuf-c)
find_program(PROTOC_C protoc-c REQUIRED)
find_program(PROTOC protoc REQUIRED)

set(PLUGIN_PROTO ${CMAKE_SOURCE_DIR}/proto/deviceplugin.proto)
set(PLUGIN_GEN ${CMAKE_BINARY_DIR}/gen)
file(MAKE_DIRECTORY ${PLUGIN_GEN}/proto ${PLUGIN_GEN}/py)

# protoc-c 1.4.1 names a struct member `register` after `rpc Register` (a C keyword), so it gets
# the messages only; services are served by our own C-core code (docs/reference/real-peers.md §A).
file(READ ${PLUGIN_PROTO} _dp_proto)
# The services are the last blocks of the file: cut from the first one to the end.
string(FIND "${_dp_proto}" "\nservice " _dp_svc)
string(SUBSTRING "${_dp_proto}" 0 ${_dp_svc} _dp_msgs)
file(CONFIGURE OUTPUT ${PLUGIN_GEN}/proto/deviceplugin.proto CONTENT "${_dp_msgs}" @ONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PLUGIN_PROTO})

add_custom_command(
  OUTPUT ${PLUGIN_GEN}/deviceplugin.pb-c.c ${PLUGIN_GEN}/deviceplugin.pb-c.h
  COMMAND ${PROTOC_C} -I${PLUGIN_GEN}/proto --c_out=${PLUGIN_GEN} ${PLUGIN_GEN}/proto/deviceplugin.proto
  DEPENDS ${PLUGIN_GEN}/proto/deviceplugin.proto
  COMMENT "protoc-c deviceplugin.proto")
set_source_files_properties(${PLUGIN_GEN}/deviceplugin.pb-c.c PROPERTIES COMPILE_OPTIONS "-w")
target_sources(gpulet_lib PRIVATE ${PLUGIN_GEN}/deviceplugin.pb-c.c ${PLUGIN_GEN}/deviceplugin.pb-c.h)
target_link_libraries(gpulet_lib PUBLIC PkgConfig::GRPC PkgConfig::PROTOBUFC)

# Python messages for the kubelet stand-in (python3-grpcio + python3-protobuf, an independent
# implementation of both gRPC and protobuf): generated from the full proto, never committed.
add_custom_command(
  OUTPUT ${PLUGIN_GEN}/py/deviceplugin_pb2.py
  COMMAND ${PROTOC} -I${CMAKE_SOURCE_DIR}/proto --python_out=${PLUGIN_GEN}/py ${PLUGIN_PROTO}
  DEPENDS ${PLUGIN_PROTO}
  COMMENT "protoc --python_out deviceplugin.proto")
add_custom_target(plugin_pyproto ALL DEPENDS ${PLUGIN_GEN}/py/deviceplugin_pb2.py)

gpulet_unit_test(plugin_config_unit tests/unit/test_plugin_config.c)
gpulet_unit_test(plugin_allocate_unit tests/unit/test_plugin_allocate.c)
gpulet_unit_test(plugin_mps_unit tests/unit/test_plugin_mps.c)

file(GLOB PLUGIN_PY_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/integration/test_plugin*.py)
foreach(t ${PLUGIN_PY_TESTS})
  get_filename_component(_n ${t} NAME_WE)
  string(REGEX REPLACE "^test_" "" _n ${_n})
  gpulet_script_test(${_n} /usr/bin/python3 ${t})
  set_tests_properties(${_n} PROPERTIES TIMEOUT 90)
endforeach()

gpulet_unit_test(plugin_node_health_unit tests/unit/test_node_health.c)
