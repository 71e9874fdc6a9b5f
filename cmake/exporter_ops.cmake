# Exporter operations (issue 14): HTTP behaviour under stalled clients and keep-alive, one readiness
# flag, alert rules judged by promtool, the shipped dashboard evaluated by a real Prometheus.
gpulet_script_test(exporter_http /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_exporter_http.py)
gpulet_script_test(exporter_prometheus /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_exporter_prometheus.py)
gpulet_unit_test(exporter_health tests/unit/test_exporter_health.c)
# Every way out of `gpulet exporter` stops what it started (src/exporter/daemon.c); leak-checked in the ASan suite.
gpulet_script_test(exporter_exits /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_exporter_exits.py)
# The exporter's options against dcgm-exporter's: switches that take a value, empty text options, typed -d and
# --kubernetes-gpu-id-type naming the source of a bad value.
gpulet_script_test(exporter_options /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_exporter_options.py)
