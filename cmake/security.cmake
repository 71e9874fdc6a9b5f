# The security suite (tests/security/): a hostile image against `gpulet cdi-hook` and the jail its
# update-ldcache runs ldconfig in, each attack run by a real runtime with the hooks `cdi generate`
# writes, each checking a host canary tree is unchanged. Every group runs under runc and under crun
# (Debian 12's runc 1.1.5, crun 1.8.1; security_<script>_<group> is runc, ..._crun crun). One test
# per group so a failure names the attack. Containers use the machine's mount namespaces: serial.
# Needs root, runc, crun and busybox-static (.ci/packages.txt); exit 77 only without them.
function(security_tests script name groups)
  foreach(_rt runc crun)
    foreach(_g ${groups})
      if(_rt STREQUAL "runc")
        set(_t security_${name}_${_g})
      else()
        set(_t security_${name}_${_g}_${_rt})
      endif()
      gpulet_script_test(${_t} /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/security/${script} ${_g})
      set_tests_properties(${_t} PROPERTIES LABELS "security;no-asan" RUN_SERIAL TRUE SKIP_RETURN_CODE 77 TIMEOUT 180)
      set_property(TEST ${_t} APPEND PROPERTY ENVIRONMENT "CC=${CMAKE_C_COMPILER};GPULET_SEC_RUNTIME=${_rt}")
    endforeach()
  endforeach()
endfunction()

security_tests(test_hook_attacks.py hook "escape;ldconfig;rootfs;isolation;paths;walk")
# the jail, second pass (issue 30): other procfs, file handles, resource limits and capabilities;
# limits also measures ldconfig's peak memory over NVIDIA's real files (the realdriver fixture)
security_tests(test_jail_attacks.py jail "procfs;handles;limits")
foreach(_t security_jail_limits security_jail_limits_crun)
  set_tests_properties(${_t} PROPERTIES FIXTURES_REQUIRED realdriver)
  set_property(TEST ${_t} APPEND PROPERTY ENVIRONMENT "REALDRIVER_ROOT_PLAIN=${GPULET_REALDRIVER_DIR}/root-plain")
endforeach()
# what a generated spec hands a container (issue 30): the dynamic gpulet as the hook (the warning,
# and the refusal when the runtime passes the image's loader variables), /tmp/nvidia-mps made by a user;
# the full GPU's apply-cuda-memory-limits as the createRuntime hook, and an unknown action
security_tests(test_spec_attacks.py spec "fallback;mps;memlimits")
