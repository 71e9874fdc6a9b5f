/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet's command tree, read from the verbs themselves: every listed verb and sub-verb with its
 * option rows (cmd_describe(), options.h). The generators of shell completion (verb_completion.c)
 * and man pages (manpage.c) and `gpulet help VERB SUB` walk it, so a row or a verb added anywhere
 * is completed, documented and helped without a second list.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cmd/options.h"

/*
 * An upstream program's name gpulet answers to (argv[0]) and the verb it then runs. An image_only
 * name (sh, bash, config-manager: the GPU Operator's containers) is answered inside gpulet's image
 * only: no completion script claims it and no man page names it.
 */
struct cmd_alias {
	const char *program, *verb;
	bool image_only;
};

/* gpulet itself, as main.c has it. */
struct cmd_program {
	const struct cmd_menu *menu;       /* the verbs */
	int (*run)(int argc, char **argv); /* run `gpulet ARGV...` (argv[0]: the verb) and return its exit code */
	const struct cmd_alias *aliases;
	size_t n_aliases;
	const char *summary; /* what gpulet is, one line (its man page's NAME) */
	const char *about;   /* what gpulet is, a paragraph */
};

/* The deepest path: gpulet cdi-hook update-ldcache. */
#define CMD_TREE_DEPTH 3

struct cmd_node {
	char path[128];              /* "cdi generate"; "" for gpulet itself */
	const char *word;            /* the last word of the path ("generate"); "gpulet" for gpulet */
	const char *summary;         /* from the parent's menu; NULL for gpulet */
	const struct cmd_verb *verb; /* its options, or NULL (a menu alone: cdi) */
	const struct cmd_menu *menu; /* its sub-verbs, or NULL */
	size_t parent, depth;        /* gpulet: 0, 0 */
};

struct cmd_tree {
	struct cmd_node *nodes; /* nodes[0] is gpulet; a parent comes before its children, in menu order */
	size_t n;
};

/*
 * Every listed verb of p, each run with the words of its path under a describer. -errno, and the
 * reason on stderr, when a listed verb does not describe itself (its module cannot be loaded, or its
 * cmd_verb's name is not its path).
 */
int cmd_tree_load(const struct cmd_program *p, struct cmd_tree *ret);
void cmd_tree_clear(struct cmd_tree *t);

/* Each alias of p (not image_only) on f as BEFORE program BETWEEN verb AFTER, the two words written by put (quoted for
 * the reader). */
void cmd_aliases_print(FILE *f, const struct cmd_program *p, void (*put)(FILE *f, const char *word), const char *before,
		       const char *between, const char *after);

/* The rows of a node's verb (its own, then --help and --version), or -1 for a node without a verb. */
int cmd_node_rows(const struct cmd_node *n, struct optspec *rows, struct optspec_cli *cli);

/* `gpulet help [VERB [SUB]]`, `gpulet version`, `gpulet completion bash|zsh`, `gpulet manpages DIR`. */
int cmd_help_verb(const struct cmd_program *p, int argc, char **argv);
int cmd_version_verb(const struct cmd_program *p, int argc, char **argv);
int cmd_completion(const struct cmd_program *p, int argc, char **argv);
int cmd_manpages(const struct cmd_program *p, int argc, char **argv);
