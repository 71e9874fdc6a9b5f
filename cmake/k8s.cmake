# A real Kubernetes node (tests/k8s, issue 26): etcd, kube-apiserver and kubelet 1.34, containerd 2 with
# CDI, built from their Go modules through the module proxy by tests/k8s/peers.py into a cache outside
# the clone (~/.cache/gpulet-peers; GPULET_PEERS_CACHE). The first build takes minutes (k8s.io/kubernetes),
# later runs find the binaries at once. Without the registries the setup fails and so do the tests that
# need it (CTest: "Failed test dependencies"); they never skip.
add_test(NAME k8s_peers_setup COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/k8s/peers.py)
set_tests_properties(k8s_peers_setup PROPERTIES FIXTURES_SETUP k8speers TIMEOUT 3600 RESOURCE_LOCK k8speers
                     LABELS "k8s;no-asan")

file(GLOB K8S_PY_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/k8s/test_k8s_*.py)
foreach(t ${K8S_PY_TESTS})
  get_filename_component(_n ${t} NAME_WE)
  string(REGEX REPLACE "^test_" "" _n ${_n})
  gpulet_script_test(${_n} /usr/bin/python3 ${t})
  # one node at a time: each brings up its own apiserver on the namespace's loopback, kubelet, containerd
  set_tests_properties(${_n} PROPERTIES LABELS "k8s;no-asan" RUN_SERIAL TRUE TIMEOUT 900
                       FIXTURES_REQUIRED "k8speers;k8stools")
endforeach()
