/* SPDX-License-Identifier: Apache-2.0 */
/* Placeholder until this verb lands; it says so instead of pretending to work. */
#include <stdio.h>

#include "cmd.h"

int cmd_plugin(int argc, char **argv)
{
	fprintf(stderr, "gpulet plugin: not implemented in this build\n");
	return 1;
}
