/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet help [VERB [SUB]] and gpulet version: the help and the version as verbs, as kubectl and helm have them. */
#include <stdio.h>
#include <string.h>

#include "cmd/tree.h"

static const struct optspec no_opts[] = {{0}};

static const struct cmd_verb help_verb = CMD_VERB(
    "help", "[COMMAND [SUBCOMMAND]]", no_opts, "gpulet help cdi generate",
    .about = "The help of gpulet, or of a command: 'gpulet help doctor' is 'gpulet doctor --help', 'gpulet help\n"
	     "cdi generate' is 'gpulet cdi generate --help'.",
    .operands = true);

int cmd_help_verb(const struct cmd_program *p, int argc, char **argv)
{
	struct cmd_common o = {0};
	char *args[CMD_TREE_DEPTH + 2] = {0}, help[] = "--help";
	int n, r = cmd_parse(&help_verb, argc, argv, &o);

	if (r != CMD_CONTINUE)
		return r;
	n = argc - optind;
	if (n == 0) {
		p->menu->help(stdout);
		return 0;
	}
	if (n > CMD_TREE_DEPTH)
		return cmd_usage_error(&help_verb, "at most %d words: a command and its subcommand", CMD_TREE_DEPTH);
	memcpy(args, argv + optind, (size_t)n * sizeof(*args));
	args[n] = help;
	return p->run(n + 1, args);
}

static const struct cmd_verb version_verb =
    CMD_VERB("version", "", no_opts, "gpulet version",
	     .about = "gpulet's version, and for each command that replaces an upstream program, the program and\n"
		      "the upstream version it was checked against (as gpulet --version or -v).");

int cmd_version_verb(const struct cmd_program *p, int argc, char **argv)
{
	struct cmd_common o = {0};
	int r = cmd_parse(&version_verb, argc, argv, &o);

	(void)p;
	if (r != CMD_CONTINUE)
		return r;
	cmd_print_version(stdout, NULL);
	return 0;
}
