# The shell completion scripts and the man pages, written by the built gpulet from its option tables
# (src/cmd/verb_completion.c, src/cmd/manpage.c) into build/share/, installed with it (install.cmake):
#   share/bash-completion/completions/gpulet (and a link per upstream program name gpulet answers to)
#   share/zsh/vendor-completions/_gpulet
#   share/man/man1/gpulet.1, gpulet-VERB.1
# A cross build runs gpulet through CMAKE_CROSSCOMPILING_EMULATOR (qemu-user), or writes none.
include(GNUInstallDirs)
set(GPULET_SHARE ${CMAKE_BINARY_DIR}/share)
if(CMAKE_CROSSCOMPILING AND NOT CMAKE_CROSSCOMPILING_EMULATOR)
  message(STATUS "gpulet: cross build without CMAKE_CROSSCOMPILING_EMULATOR: no completion scripts or man pages")
  add_custom_target(gpulet_cli_docs) # nothing to write: `make install` builds it all the same
else()
  set(GPULET_CLI_DOCS ON) # install.cmake installs them
  list(JOIN CMAKE_CROSSCOMPILING_EMULATOR " " _gpulet_emu)
  set(_gpulet_run "${_gpulet_emu} $<TARGET_FILE:gpulet>")
  add_custom_command(
    OUTPUT ${GPULET_SHARE}/cli.stamp
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${GPULET_SHARE}/man/man1
    COMMAND ${CMAKE_COMMAND} -E make_directory ${GPULET_SHARE}/man/man1 ${GPULET_SHARE}/bash-completion/completions
            ${GPULET_SHARE}/zsh/vendor-completions
    COMMAND sh -c "${_gpulet_run} manpages ${GPULET_SHARE}/man/man1"
    COMMAND sh -c "${_gpulet_run} completion bash > ${GPULET_SHARE}/bash-completion/completions/gpulet"
    COMMAND sh -c "${_gpulet_run} completion zsh > ${GPULET_SHARE}/zsh/vendor-completions/_gpulet"
    COMMAND ${CMAKE_COMMAND} -E touch ${GPULET_SHARE}/cli.stamp
    DEPENDS gpulet gpulet_grpc gpulet_http
    COMMENT "Writing gpulet's completion scripts and man pages"
    VERBATIM)
  add_custom_target(gpulet_cli_docs ALL DEPENDS ${GPULET_SHARE}/cli.stamp)
endif()


# Every verb's completion (a real bash, a real zsh) and man page (groff -ww, man -l) checked against its --help.
gpulet_script_test(cmd_completion /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_completion.py)
gpulet_script_test(cmd_manpages /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_manpages.py)
