# The HTTP endpoints' shared front (src/web/): the one server, the web config, TLS, basic auth.
# Its libraries (libmicrohttpd, GnuTLS, libxcrypt) are linked in cmake/exporter.cmake.
gpulet_unit_test(web_authq tests/unit/test_authq.c)

# Hostile network clients against the exporter's and the doctor's endpoints (issue 30 items 6-8):
# credential lock-out, slowloris on headers and on the TLS handshake, per-address floods. One test per
# group so a failure names the attack; each holds hundreds of sockets for tens of seconds: serial.
foreach(_g lockout slowloris tls doctor)
  gpulet_script_test(security_http_${_g} /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/security/test_http_attacks.py
                     ${_g})
  set_tests_properties(security_http_${_g} PROPERTIES LABELS "security" RUN_SERIAL TRUE TIMEOUT 300)
endforeach()
