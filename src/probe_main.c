/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet-probe: `gpulet probe` as a small executable that needs nothing but glibc (libcuda and
 * libnvidia-ml are dlopen'd), so it can be copied into any CUDA container, whatever its
 * distribution. The same code as the verb (src/cmd/verb_probe.c, src/doctor/probe.c); CMakeLists.txt
 * says how it is linked. Only here and in main.c is exit() called.
 */
#include <stdlib.h>

#include "cmd/cmd.h"

int main(int argc, char **argv)
{
	exit(cmd_probe(argc, argv));
}
