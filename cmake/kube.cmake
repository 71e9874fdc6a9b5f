# src/kube: the gRPC client (status map, registration), the kubelet checkpoint, k8s objects (judged by
# PyYAML through build/k8s_dump), kubelet configuration files. PodResources is in exporter.cmake with its proto.
gpulet_unit_test(kube_grpc_client tests/unit/test_grpc_client.c)
gpulet_unit_test(kube_checkpoint tests/unit/test_checkpoint.c)
gpulet_unit_test(kube_k8sobj tests/unit/test_k8sobj.c)
gpulet_unit_test(kube_kubeletcfg tests/unit/test_kubeletcfg.c)
add_executable(k8s_dump tests/integration/k8s_dump.c)
target_link_libraries(k8s_dump PRIVATE gpulet_lib)
gpulet_script_test(kube_k8sobj_peers /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_k8sobj_peers.py
                   ${CMAKE_BINARY_DIR}/k8s_dump)
