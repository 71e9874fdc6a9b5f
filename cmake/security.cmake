# The security suite (tests/security/): a hostile image against `gpulet cdi-hook`, each attack run by
# real runc with the hooks `cdi generate` writes, each checking a host canary tree is unchanged. One
# test per group so a failure names the attack. runc containers use the machine's cgroups and mount
# namespaces: serial. Needs root, runc and busybox-static (.ci/packages.txt); exit 77 only without them.
foreach(_g escape ldconfig rootfs isolation paths walk)
  gpulet_script_test(security_hook_${_g} /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/security/test_hook_attacks.py
                     ${_g})
  set_tests_properties(security_hook_${_g} PROPERTIES LABELS "security;no-asan" RUN_SERIAL TRUE
                       SKIP_RETURN_CODE 77 TIMEOUT 180)
  set_property(TEST security_hook_${_g} APPEND PROPERTY ENVIRONMENT "CC=${CMAKE_C_COMPILER}")
endforeach()
