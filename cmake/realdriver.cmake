# NVIDIA's real 535 user-space driver as a test peer (issue 12; docs/reference/real-driver.md).
# realdriver_setup fetches the Debian 12 non-free packages once into build/realdriver/ (a private
# apt sources dir: the machine's apt sources are not touched, nothing is installed) and assembles
# the Debian and plain driver roots; a second run is offline. The tests below REQUIRE it: when the
# fetch fails they fail (CTest reports "Failed test dependencies"), they never skip.
set(GPULET_REALDRIVER_DIR ${CMAKE_BINARY_DIR}/realdriver)
add_test(NAME realdriver_setup
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/lib/realdriver.py setup ${GPULET_REALDRIVER_DIR})
set_tests_properties(realdriver_setup PROPERTIES FIXTURES_SETUP realdriver TIMEOUT 900 RESOURCE_LOCK realdriver)

# realdriver_test(NAME command...): a script test on the real driver roots.
function(realdriver_test name)
  gpulet_script_test(${name} ${ARGN})
  set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT "CC=${CMAKE_C_COMPILER}")
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED realdriver)
endfunction()

# nvml.h and libnvidia-ml.so.1 against src/nvml/abi.h + symbols.h (compiled at test time)
realdriver_test(realdriver_nvml_abi sh ${CMAKE_SOURCE_DIR}/tests/realdriver/abi.sh)
# the fake NVML answers like the real library where both can be compared without a GPU
realdriver_test(realdriver_fakenvml_compare /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/realdriver/compare-fake.py)
set_tests_properties(realdriver_fakenvml_compare PROPERTIES LABELS no-asan) # ctypes cannot load an ASan library
# devices, cdi generate, labels, plugin, exporter, doctor: "Driver Not Loaded" on both roots
realdriver_test(realdriver_verbs /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/realdriver/test_verbs.py)
# cdi generate on both roots: golden + nvidia-ctk's lists
realdriver_test(realdriver_cdi /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/realdriver/test_cdi.py)

# gpulet probe with the real libcuda.so.1: no device nodes, nodes without a driver, no CUDA_VERSION
realdriver_test(realdriver_probe /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/realdriver/test_probe.py
                ${GPULET_REALDRIVER_DIR}/root-plain)
