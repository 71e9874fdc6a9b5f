# src/nvml: the loader, mig-minors, the node model, the XID table, the one event watcher.
gpulet_unit_test(nvml_loader tests/unit/test_nvml.c)
gpulet_unit_test(nvml_migminors tests/unit/test_migminors.c)
gpulet_unit_test(nvml_node tests/unit/test_node.c)
gpulet_unit_test(nvml_xid tests/unit/test_xid.c)
# The one NVML event watcher (src/nvml/watch.c) that health and the exporter share.
gpulet_unit_test(nvml_watch tests/unit/test_watch.c)
add_dependencies(nvml_watch fakenvml)
set_tests_properties(nvml_watch PROPERTIES TIMEOUT 60)
# nvml_open_host: flags and env, Debian's alternatives layout, with the fake NVML (no network)
gpulet_unit_test(nvml_open tests/unit/test_nvml_open.c)
add_dependencies(nvml_open fakenvml)
