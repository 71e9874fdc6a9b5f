# `cmake --install build --prefix /usr` (DESTDIR for a root): gpulet and the program names it answers
# to, as links, so manifests written for NVIDIA's images (command: nvidia-device-plugin, ...) run it.
# The image (deploy/image/build.sh) is made this way.
include(GNUInstallDirs)
install(TARGETS gpulet RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# dcgm-exporter and config-manager: the GPU Operator's containers (docs/reference/operator.md; config-manager
# only says why it cannot run yet)
set(GPULET_PROGRAM_NAMES nvidia-device-plugin gpu-feature-discovery mps-control-daemon dcgm-exporter config-manager)
if(NOT TARGET gpulet_cdi_hook)
  list(APPEND GPULET_PROGRAM_NAMES nvidia-cdi-hook)
endif()
foreach(n ${GPULET_PROGRAM_NAMES})
  install(CODE "file(CREATE_LINK gpulet \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/${n}\" SYMBOLIC)")
endforeach()
# The serving modules (docs/HACKING.md "Lean start-up"): the loader looks in ../lib/gpulet from bin/.
install(TARGETS gpulet_grpc gpulet_http LIBRARY DESTINATION lib/gpulet PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
# gpulet probe for any container: needs only glibc.
if(TARGET gpulet_probe)
  install(TARGETS gpulet_probe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# The static CDI hook generated specs name (docs/reference/cdi-hook.md §5), also as nvidia-cdi-hook.
if(TARGET gpulet_cdi_hook)
  install(TARGETS gpulet_cdi_hook RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(CODE "file(CREATE_LINK gpulet-cdi-hook \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/nvidia-cdi-hook\" SYMBOLIC)")
endif()
