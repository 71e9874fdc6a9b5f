/* SPDX-License-Identifier: Apache-2.0 */
/* gpulet's command tree, read by running each listed verb's entry point under a describer (options.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tree.h"
#include "util/macro.h"

/* What one described run handed over: the verb whose name is the path, and the menu where the path ends. */
struct capture {
	const char *path;
	const struct cmd_verb *verb;
	const struct cmd_menu *menu;
};

static void on_verb(void *data, const struct cmd_verb *v)
{
	struct capture *c = data;

	/* a verb of verbs is handed over on the way to its sub-verb too (cdi-hook before update-ldcache) */
	if (streq(v->name, c->path))
		c->verb = v;
}

static void on_menu(void *data, const struct cmd_menu *m)
{
	((struct capture *)data)->menu = m;
}

/* Run the path's words (at most CMD_TREE_DEPTH) under a describer: what the verb there is. */
static int describe(const struct cmd_program *p, struct cmd_node *n)
{
	char words[CMD_TREE_DEPTH][sizeof(n->path)], *argv[CMD_TREE_DEPTH + 1] = {0};
	struct capture cap = {.path = n->path};
	const struct cmd_describer d = {on_verb, on_menu, &cap};
	int argc = 0, rc;

	for (const char *s = n->path; *s && argc < CMD_TREE_DEPTH; argc++) {
		size_t l = strcspn(s, " ");

		snprintf(words[argc], sizeof(words[argc]), "%.*s", (int)l, s);
		argv[argc] = words[argc];
		s += l + (s[l] == ' ');
	}
	cmd_describe(&d);
	rc = p->run(argc, argv);
	cmd_describe(NULL);
	if (rc != 0 || (!cap.verb && !cap.menu)) {
		fprintf(stderr, "gpulet: 'gpulet %s' does not describe itself%s\n", n->path,
			rc ? " (said why above)" : ": its cmd_verb's name is not its path, or it parses no options");
		return -ENOENT;
	}
	n->verb = cap.verb;
	n->menu = cap.menu;
	return 0;
}

static int add_child(const struct cmd_program *p, struct cmd_tree *t, size_t *cap, size_t parent, const char *word,
		     const char *summary)
{
	const struct cmd_node *up = &t->nodes[parent];
	struct cmd_node n = {.word = word, .summary = summary, .parent = parent, .depth = up->depth + 1};
	int r;

	if ((size_t)snprintf(n.path, sizeof(n.path), "%s%s%s", up->path, up->depth ? " " : "", word) >= sizeof(n.path))
		return -ENAMETOOLONG;
	r = describe(p, &n);
	if (r < 0)
		return r;
	if (t->n == *cap) {
		struct cmd_node *grown = grow_alloc(t->nodes, cap, sizeof(*t->nodes), 32);

		if (!grown)
			return -ENOMEM;
		t->nodes = grown;
	}
	t->nodes[t->n++] = n;
	return 0;
}

int cmd_tree_load(const struct cmd_program *p, struct cmd_tree *ret)
{
	struct cmd_tree t = {0};
	size_t cap = 0;
	int r = 0;

	t.nodes = grow_alloc(NULL, &cap, sizeof(*t.nodes), 32);
	if (!t.nodes)
		return -ENOMEM;
	t.nodes[t.n++] = (struct cmd_node){.word = "gpulet", .menu = p->menu};
	/* breadth first: a node's children are appended after it, so the loop reaches them too */
	for (size_t i = 0; r >= 0 && i < t.n; i++) {
		const struct cmd_menu *m = t.nodes[i].menu;

		for (size_t k = 0; m && r >= 0 && t.nodes[i].depth < CMD_TREE_DEPTH && k < m->n; k++) {
			const char *summary, *word = cmd_menu_row(m, k, &summary);

			if (!m->summary_off || summary)
				r = add_child(p, &t, &cap, i, word, summary);
		}
	}
	if (r < 0) {
		cmd_tree_clear(&t);
		return r;
	}
	*ret = t;
	return 0;
}

void cmd_tree_clear(struct cmd_tree *t)
{
	free(t->nodes);
	*t = (struct cmd_tree){0};
}

int cmd_node_rows(const struct cmd_node *n, struct optspec *rows, struct optspec_cli *cli)
{
	return n->verb ? cmd_verb_rows(n->verb, rows, cli) : -1;
}

void cmd_aliases_print(FILE *f, const struct cmd_program *p, void (*put)(FILE *f, const char *word), const char *before,
		       const char *between, const char *after)
{
	for (size_t i = 0; i < p->n_aliases; i++) {
		if (p->aliases[i].image_only)
			continue;
		fputs(before, f);
		put(f, p->aliases[i].program);
		fputs(between, f);
		put(f, p->aliases[i].verb);
		fputs(after, f);
	}
}
