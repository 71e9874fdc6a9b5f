# Reliability and security tests (issue 8): soak + faults, bad input, valgrind memcheck.
# Fuzz targets and the corpus replay are in cmake/fuzz.cmake.

# Soak: 50 kubelet restarts under Allocate/GetPreferredAllocation load, GPU lost/recovered, MIG
# re-partition, SIGHUP reloads; about 90 s. The long form: tests/soak/soak.py --long.
gpulet_script_test(reliability_soak /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/soak/soak.py)
set_tests_properties(reliability_soak PROPERTIES TIMEOUT 400 LABELS soak)

# Bad input: the real binary on broken files, full disks (a 64k tmpfs), unreadable dirs, a second
# plugin instance; each checks the message (what, where, fix) and that nothing is half-written.
gpulet_script_test(reliability_badinput /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/badinput/test_badinput.py
                   config cdi doctor nvml fulldisk unreadable)
set_tests_properties(reliability_badinput PROPERTIES TIMEOUT 300)
gpulet_script_test(reliability_badinput_instance /usr/bin/python3
                   ${CMAKE_SOURCE_DIR}/tests/badinput/test_badinput.py instance)
set_tests_properties(reliability_badinput_instance PROPERTIES TIMEOUT 120)

# valgrind memcheck (definite + indirect leaks and memory errors fail): the C unit tests with their
# CTest environment and the fuzz replays; the key black-box commands and a plugin session.
# Not in the ASan tree (valgrind cannot run ASan binaries). Skip locally with `ctest -LE valgrind`.
find_program(VALGRIND_EXECUTABLE valgrind)
foreach(_vg units blackbox)
  gpulet_script_test(reliability_valgrind_${_vg} /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/valgrind/run.py ${_vg})
  set_tests_properties(reliability_valgrind_${_vg} PROPERTIES TIMEOUT 1800 LABELS "valgrind;no-asan")
endforeach()

# Security properties (docs/security.md), one test per owner so a failure names whose code it is.
foreach(_sec sockets noshell exporter paths)
  gpulet_script_test(reliability_security_${_sec} /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/badinput/test_security.py
                     ${_sec})
  set_tests_properties(reliability_security_${_sec} PROPERTIES TIMEOUT 300)
endforeach()
