/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet plugin-node-health: the plugin's own, hidden (plugin/node_health_int.h). In the executable,
 * not the gRPC module the plugin lives in: the child loads only what talking to the API server needs.
 */
#include <stdio.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "plugin/node_health_int.h"

/* The plugin's own (--node-health): one round with the API server, request on stdin, answer on
 * stdout (plugin/node_health_int.h); never run by hand, so not listed. */
int cmd_plugin_node_health(int argc, char **argv)
{
	struct gerr err = {0};

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "gpulet %s: takes no arguments (the plugin runs it)\n", NODE_HEALTH_VERB);
		return EXIT_USAGE;
	}
	if (node_health_serve(STDIN_FILENO, STDOUT_FILENO, &err) < 0) {
		fprintf(stderr, "gpulet %s: %s\n", NODE_HEALTH_VERB, err.msg);
		return 1;
	}
	return 0;
}
