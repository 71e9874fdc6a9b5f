# `cmake --install build --prefix /usr` (DESTDIR for a root): gpulet and the program names it answers
# to, as links, so manifests written for NVIDIA's images (command: nvidia-device-plugin, ...) run it.
# The image (deploy/image/build.sh) is made this way.
include(GNUInstallDirs)
install(TARGETS gpulet RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# the upstream program names gpulet answers to (programs[] in src/main.c); dcgm-exporter and config-manager:
# the GPU Operator's containers (docs/reference/operator.md, docs/reference/config-manager.md)
set(GPULET_UPSTREAM_NAMES nvidia-device-plugin gpu-feature-discovery mps-control-daemon dcgm-exporter nvidia-cdi-hook
    config-manager)
set(GPULET_PROGRAM_NAMES ${GPULET_UPSTREAM_NAMES})
if(TARGET gpulet_cdi_hook)
  list(REMOVE_ITEM GPULET_PROGRAM_NAMES nvidia-cdi-hook) # the static hook's link, below
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
# The completion scripts and man pages cmake/cli.cmake writes (component "doc"): bash-completion loads a
# command's script by the command's name, so each upstream name gets a link to gpulet's. `make install` builds
# them (target gpulet_cli_docs); a tree built for gpulet alone (the image's `--target gpulet`) has none, and
# then none are installed.
if(GPULET_CLI_DOCS)
  install(FILES ${GPULET_SHARE}/bash-completion/completions/gpulet
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT doc OPTIONAL)
  foreach(n ${GPULET_UPSTREAM_NAMES})
    install(CODE "if(EXISTS \"${GPULET_SHARE}/bash-completion/completions/gpulet\")
  file(CREATE_LINK gpulet \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/bash-completion/completions/${n}\" SYMBOLIC)
endif()" COMPONENT doc)
  endforeach()
  install(FILES ${GPULET_SHARE}/zsh/vendor-completions/_gpulet
          DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions COMPONENT doc OPTIONAL)
  install(DIRECTORY ${GPULET_SHARE}/man/man1 DESTINATION ${CMAKE_INSTALL_MANDIR} COMPONENT doc OPTIONAL
          FILES_MATCHING PATTERN "*.1")
endif()
