/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet-cdi-hook: `gpulet cdi-hook` as a fully static executable, the binary generated CDI specs
 * name. Static, so no dynamic loader runs and no LD_PRELOAD or LD_LIBRARY_PATH in the environment
 * a runtime gives its hooks can load code into a process that is root on the host. Installed or
 * linked as nvidia-cdi-hook it answers the same (the action is argv[1] either way). The same code
 * as the verb (src/cmd/verb_cdihook.c, src/cdihook/) but NVML, which a static program cannot load:
 * apply-cuda-memory-limits hands its NVML call to the gpulet installed beside it
 * (cdihook_exec_dynamic()). CMakeLists.txt says how it is linked.
 */
#include <stdlib.h>

#include "cmd/cmd.h"

int main(int argc, char **argv)
{
	exit(cmd_cdihook_static(argc, argv));
}
