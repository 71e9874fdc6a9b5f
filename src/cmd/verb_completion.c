/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpulet completion bash|zsh: a completion script written from the command tree (cmd/tree.h), as
 * kubectl and helm write theirs. Both scripts share their data, a few case statements that both
 * shells read alike (a path's sub-verbs, its flags, what a flag's value is, its operands), and each
 * has its own small function that walks the words typed so far. The scripts answer to gpulet and to
 * the upstream program names gpulet answers to (nvidia-device-plugin runs plugin, ...).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tree.h"
#include "util/macro.h"

/* (key, value) pairs of one case statement; keys with equal values share one branch, in the order first seen. */
struct pairs {
	size_t n, cap;
	struct pair {
		char *key, *value; /* value: shell text as it is written (quoted already) */
	} * v;
};

static void pairs_clear(struct pairs *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].key);
		free(p->v[i].value);
	}
	free(p->v);
	*p = (struct pairs){0};
}

/* Add key -> value, taking value (NULL: out of memory before, passed on). */
static int pairs_add(struct pairs *p, const char *key, char *value)
{
	char *k = value ? strdup(key) : NULL;

	if (k && p->n == p->cap) {
		struct pair *v = grow_alloc(p->v, &p->cap, sizeof(*p->v), 64);

		if (v)
			p->v = v;
	}
	if (!k || p->n == p->cap) {
		free(k);
		free(value);
		return -ENOMEM;
	}
	p->v[p->n++] = (struct pair){k, value};
	return 0;
}

/* s in single quotes, as both shells read it. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	fputc('\'', f);
}

/* fn() { case $1 in 'key'|'key2') VAR=VALUE ;; ... *) VAR=EMPTY ;; esac }. */
static void emit_case(FILE *f, const char *fn, const char *what, const struct pairs *p, const char *var,
		      const char *empty)
{
	fprintf(f, "# %s\n%s() {\n\tcase $1 in\n", what, fn);
	for (size_t i = 0; i < p->n; i++) {
		bool seen = false, first = true;

		for (size_t j = 0; j < i && !seen; j++)
			seen = streq(p->v[j].value, p->v[i].value);
		if (seen)
			continue;
		fputc('\t', f);
		for (size_t j = i; j < p->n; j++)
			if (streq(p->v[j].value, p->v[i].value)) {
				fputs(first ? "" : "|", f);
				put_quoted(f, p->v[j].key);
				first = false;
			}
		fprintf(f, ") %s=%s ;;\n", var, p->v[i].value);
	}
	fprintf(f, "\t*) %s=%s ;;\n\tesac\n}\n\n", var, empty);
}

/* The text memstream f collected into *buf, closed (NULL when out of memory). */
static char *text_end(FILE *f, char **buf)
{
	if (!f || fclose(f) != 0) {
		free(*buf);
		*buf = NULL;
	}
	return *buf;
}

/* 'kind:name name ...' for a row whose value completes to kind (the names of a choice), or NULL (none). */
static char *value_of(const struct optspec *o)
{
	static const char *const kinds[] = {
	    [OPTSPEC_VALUE_TEXT] = "text", [OPTSPEC_VALUE_FILE] = "file",   [OPTSPEC_VALUE_DIR] = "dir",
	    [OPTSPEC_VALUE_WORD] = "word", [OPTSPEC_VALUE_WORDS] = "words", [OPTSPEC_VALUE_BOOL] = "bool",
	};
	enum optspec_value v = optspec_value(o);
	char *buf = NULL, *words = NULL;
	size_t len, wlen;
	FILE *f, *w;

	if (v == OPTSPEC_VALUE_NONE || !(w = open_memstream(&words, &wlen)))
		return NULL;
	fputs(kinds[v], w);
	for (size_t i = 0; (v == OPTSPEC_VALUE_WORD || v == OPTSPEC_VALUE_WORDS) && i < o->n_names; i++)
		fprintf(w, "%c%s", i ? ' ' : ':', o->names[i].name);
	if (!(words = text_end(w, &words)) || !(f = open_memstream(&buf, &len))) {
		free(words);
		return NULL;
	}
	put_quoted(f, words);
	free(words);
	return text_end(f, &buf);
}

/* A flag's help cut to its first clause, at most 70 characters: what zsh shows beside it. */
static void short_help(const char *help, char *buf, size_t size)
{
	size_t n = strcspn(help, ";(\n");

	while (n > 0 && help[n - 1] == ' ')
		n--;
	if (n > 70)
		snprintf(buf, size, "%.67s...", help);
	else
		snprintf(buf, size, "%.*s", (int)n, help);
}

/* The data of both scripts, one case statement each, and zsh's descriptions. */
struct data {
	struct pairs sub, flags, value, operand, zsub, zflags;
};

static void data_clear(struct data *d)
{
	pairs_clear(&d->sub);
	pairs_clear(&d->flags);
	pairs_clear(&d->value);
	pairs_clear(&d->operand);
	pairs_clear(&d->zsub);
	pairs_clear(&d->zflags);
}

/* A word list (for REPLY) and zsh's array of "word:description" being collected. */
struct lists {
	char *words, *descs;
	size_t wlen, dlen, n;
	FILE *w, *d;
};

static int lists_open(struct lists *l)
{
	*l = (struct lists){0};
	l->w = open_memstream(&l->words, &l->wlen);
	l->d = open_memstream(&l->descs, &l->dlen);
	return l->w && l->d ? 0 : -ENOMEM;
}

static void lists_add(struct lists *l, const char *word, const char *desc)
{
	char entry[256];

	if (!l->w || !l->d)
		return;
	fprintf(l->w, "%s%s", l->n++ ? " " : "", word);
	snprintf(entry, sizeof(entry), "%s:%s", word, desc ? desc : "");
	fputc(' ', l->d);
	put_quoted(l->d, entry);
}

/* Close l; with path, add its pairs: the words quoted (for REPLY) and zsh's array "( ... )". */
static int lists_close(struct lists *l, const char *path, struct pairs *words, struct pairs *descs)
{
	_cleanup_free_ char *w = text_end(l->w, &l->words), *d = text_end(l->d, &l->descs);
	char *qw = NULL, *zd = NULL;
	size_t len;
	FILE *f;

	if (!path)
		return 0;
	if (!w || !d || !(f = open_memstream(&qw, &len)))
		return -ENOMEM;
	put_quoted(f, w);
	qw = text_end(f, &qw);
	if (asprintf(&zd, "(%s )", d) < 0)
		zd = NULL;
	if (pairs_add(words, path, qw) < 0) {
		free(zd);
		return -ENOMEM;
	}
	return pairs_add(descs, path, zd);
}

/* A node's flags (every name of every row that is a flag), what their values are, its operands. */
static int add_verb(const struct cmd_node *n, struct data *d)
{
	struct optspec rows[OPTSPEC_MAX_ROWS + 1];
	struct optspec_cli cli;
	struct lists l;
	char key[256], desc[128], flag[80];
	int r = lists_open(&l);

	if (r >= 0)
		r = cmd_node_rows(n, rows, &cli) < 0 ? -EINVAL : 0;
	for (const struct optspec *o = rows; r >= 0 && o->kind != OPT_END; o++) {
		const char *names[] = {o->name, o->alias};
		int sh = optspec_short(&cli, o);

		if (o->env_only)
			continue;
		short_help(o->help, desc, sizeof(desc));
		/* the long name, the alias, the short letter */
		for (size_t i = 0; i < ELEMENTSOF(names) + 1 && r >= 0; i++) {
			if (i < ELEMENTSOF(names) ? !names[i] : !sh)
				continue;
			if (i < ELEMENTSOF(names))
				snprintf(flag, sizeof(flag), "--%s", names[i]);
			else
				snprintf(flag, sizeof(flag), "-%c", sh);
			lists_add(&l, flag, desc);
			snprintf(key, sizeof(key), "%s%s%s", n->path, n->depth ? " " : "", flag);
			if (optspec_value(o) != OPTSPEC_VALUE_NONE)
				r = pairs_add(&d->value, key, value_of(o));
		}
	}
	if (r >= 0 && n->verb->operands && strstr(n->verb->synopsis, "FILE"))
		r = pairs_add(&d->operand, n->path, strdup("file"));
	if (r < 0) {
		lists_close(&l, NULL, NULL, NULL);
		return r;
	}
	return lists_close(&l, n->path, &d->flags, &d->zflags);
}

static int add_menu(const struct cmd_tree *t, size_t at, struct data *d)
{
	struct lists l;
	int r = lists_open(&l);

	for (size_t i = at + 1; r >= 0 && i < t->n; i++)
		if (t->nodes[i].parent == at)
			lists_add(&l, t->nodes[i].word, t->nodes[i].summary);
	return lists_close(&l, r < 0 ? NULL : t->nodes[at].path, &d->sub, &d->zsub) ?: r;
}

static int data_build(const struct cmd_tree *t, struct data *d)
{
	struct lists l;
	int r = lists_open(&l);

	/* gpulet's own flags: its menu answers to these */
	lists_add(&l, "-h", "gpulet's help");
	lists_add(&l, "--help", "gpulet's help");
	lists_add(&l, "-v", "gpulet's version");
	lists_add(&l, "--version", "gpulet's version");
	r = lists_close(&l, r < 0 ? NULL : "", &d->flags, &d->zflags) ?: r;
	for (size_t i = 0; r >= 0 && i < t->n; i++) {
		if (t->nodes[i].verb)
			r = add_verb(&t->nodes[i], d);
		if (r >= 0 && t->nodes[i].menu)
			r = add_menu(t, i, d);
	}
	return r;
}

static void emit_data(FILE *f, const struct data *d)
{
	emit_case(f, "_gpulet_sub", "The sub-verbs of a path ('' is gpulet itself).", &d->sub, "REPLY", "''");
	emit_case(f, "_gpulet_flags", "The flags of a path.", &d->flags, "REPLY", "''");
	emit_case(f, "_gpulet_value",
		  "What the value of a path's flag is: file, dir, bool, text, word:A B (one of), words:A B (a comma "
		  "list); '' none.",
		  &d->value, "REPLY", "''");
	emit_case(f, "_gpulet_operand", "What a path's operands are: file, or ''.", &d->operand, "REPLY", "''");
}

/* The case statement that turns an upstream program's name (argv0: the shell's word for it) into its verb. */
static void emit_aliases(FILE *f, const struct cmd_program *p, const char *argv0)
{
	fprintf(f, "\tcase %s in\n", argv0);
	cmd_aliases_print(f, p, put_quoted, "\t", ") at=", " ;;\n");
	fputs("\tesac\n", f);
}

static void emit_names(FILE *f, const struct cmd_program *p)
{
	fputs("gpulet", f);
	for (size_t i = 0; i < p->n_aliases; i++)
		if (!p->aliases[i].image_only)
			fprintf(f, " %s", p->aliases[i].program);
}

/*
 * The walk both shells do, one function both read alike: the words before the cursor (its arguments)
 * from the start, a flag's value skipped, `help` at the top turning the rest into a path. It sets the
 * caller's at (the path; an upstream program's name has set its verb already), help, and value (what
 * the cursor's word is when it is the last flag's value).
 */
static const char walk_fn[] =
    "# The words before the cursor: sets the caller's at (the path), help, value (the cursor is a flag's value).\n"
    "_gpulet_walk() {\n"
    "\tlocal word key\n"
    "\twhile (($#)); do\n"
    "\t\tword=$1 key=${at:+$at }\n"
    "\t\tshift\n"
    "\t\tif [[ -z $help && $word == -* ]]; then\n"
    "\t\t\t[[ $word == *=* ]] && continue\n"
    "\t\t\t_gpulet_value \"$key$word\"\n"
    "\t\t\tif [[ -n $REPLY && $REPLY != bool ]]; then\n"
    "\t\t\t\t(($#)) || value=$REPLY\n"
    "\t\t\t\t(($#)) && shift\n"
    "\t\t\tfi\n"
    "\t\t\tcontinue\n"
    "\t\tfi\n"
    "\t\tif [[ -z $at && -z $help && $word == help ]]; then help=1 && continue; fi\n"
    "\t\t_gpulet_sub \"$at\"\n"
    "\t\t[[ \" $REPLY \" == *\" $word \"* ]] && at=${at:+$at }$word\n"
    "\tdone\n"
    "\treturn 0\n"
    "}\n\n";

/* Then the cursor's word is a flag's value (after the flag or after '='), a flag, a sub-verb, an operand, or else a
 * flag. */
static const char bash_main[] =
    "_gpulet_complete() {\n"
    "\tlocal kind=${1%%%%:*} list= pre=$2 cur=$3 head=\n"
    "\t[[ $1 == *:* ]] && list=${1#*:}\n"
    "\tcase $kind in\n"
    "\tfile | dir)\n"
    "\t\tcompopt -o filenames 2>/dev/null\n"
    "\t\tmapfile -t COMPREPLY < <(compgen \"-${kind:0:1}\" -- \"$cur\") ;;\n"
    "\tword) mapfile -t COMPREPLY < <(compgen -W \"$list\" -- \"$cur\") ;;\n"
    "\twords)\n"
    "\t\t[[ $cur == *,* ]] && head=${cur%%,*},\n"
    "\t\tmapfile -t COMPREPLY < <(compgen -P \"$head\" -W \"$list\" -- \"${cur##*,}\") ;;\n"
    "\tesac\n"
    "\t[[ -n $pre ]] && COMPREPLY=(\"${COMPREPLY[@]/#/$pre}\")\n"
    "}\n\n"
    "_gpulet() {\n"
    "\tlocal line=${COMP_LINE:0:COMP_POINT} at= key cur value= help= pre= REPLY n\n"
    "\tlocal -a w\n"
    "\tread -ra w <<<\"$line\"\n"
    "\t[[ -z $line || $line == *[[:space:]] ]] && w+=('')\n"
    "\tn=$((${#w[@]} - 1))\n"
    "\tcur=${w[n]}\n"
    "%s"
    "\t_gpulet_walk \"${w[@]:1:n-1}\"\n"
    "\tkey=${at:+$at }\n"
    "\tCOMPREPLY=()\n"
    "\tif [[ -z $value && -z $help && $cur == -*=* ]]; then\n"
    "\t\t_gpulet_value \"$key${cur%%%%=*}\"\n"
    "\t\tvalue=$REPLY pre=${cur%%%%=*}= cur=${cur#*=}\n"
    "\t\t[[ $value == bool ]] && value='word:true false'\n"
    "\t\t# bash replaces the word after '=' when '=' breaks words (its default), else the whole flag=value\n"
    "\t\t[[ $COMP_WORDBREAKS == *=* ]] && pre=\n"
    "\tfi\n"
    "\tif [[ -n $value ]]; then\n"
    "\t\t_gpulet_complete \"$value\" \"$pre\" \"$cur\"\n"
    "\t\treturn 0\n"
    "\tfi\n"
    "\tif [[ -z $help && $cur == -* ]]; then\n"
    "\t\t_gpulet_flags \"$at\" && _gpulet_complete \"word:$REPLY\" '' \"$cur\"\n"
    "\t\treturn 0\n"
    "\tfi\n"
    "\t_gpulet_sub \"$at\"\n"
    "\tif [[ -n $REPLY || -n $help ]]; then\n"
    "\t\t_gpulet_complete \"word:$REPLY\" '' \"$cur\"\n"
    "\t\treturn 0\n"
    "\tfi\n"
    "\t_gpulet_operand \"$at\"\n"
    "\tif [[ -n $REPLY ]]; then\n"
    "\t\t_gpulet_complete \"$REPLY\" '' \"$cur\"\n"
    "\t\treturn 0\n"
    "\tfi\n"
    "\t_gpulet_flags \"$at\" && _gpulet_complete \"word:$REPLY\" '' \"$cur\"\n"
    "}\n\n"
    "complete -F _gpulet %s\n";

static const char zsh_main[] =
    "_gpulet_complete() {\n"
    "\tlocal kind=${1%%%%:*} list=\n"
    "\t[[ $1 == *:* ]] && list=${1#*:}\n"
    "\tcase $kind in\n"
    "\tfile) _files ;;\n"
    "\tdir) _files -/ ;;\n"
    "\tword) compadd -- ${=list} ;;\n"
    "\twords) compset -P '*,'; compadd -- ${=list} ;;\n"
    "\tesac\n"
    "}\n\n"
    "_gpulet() {\n"
    "\tlocal at= key cur=${words[CURRENT]} value= help= REPLY\n"
    "\tlocal -a reply\n"
    "%s"
    "\t_gpulet_walk \"${(@)words[2,CURRENT-1]}\"\n"
    "\tkey=${at:+$at }\n"
    "\tif [[ -z $value && -z $help && $cur == -*=* ]]; then\n"
    "\t\t_gpulet_value \"$key${cur%%%%=*}\"\n"
    "\t\tvalue=$REPLY\n"
    "\t\t[[ $value == bool ]] && value='word:true false'\n"
    "\t\tcompset -P '*='\n"
    "\tfi\n"
    "\tif [[ -n $value ]]; then\n"
    "\t\t_gpulet_complete \"$value\"\n"
    "\t\treturn\n"
    "\tfi\n"
    "\tif [[ -z $help && $cur == -* ]]; then\n"
    "\t\t_gpulet_zflags \"$at\" && _describe -t options option reply\n"
    "\t\treturn\n"
    "\tfi\n"
    "\t_gpulet_zsub \"$at\"\n"
    "\tif (($#reply)) || [[ -n $help ]]; then\n"
    "\t\t_describe -t commands command reply\n"
    "\t\treturn\n"
    "\tfi\n"
    "\t_gpulet_operand \"$at\"\n"
    "\tif [[ -n $REPLY ]]; then\n"
    "\t\t_gpulet_complete \"$REPLY\"\n"
    "\t\treturn\n"
    "\tfi\n"
    "\t_gpulet_zflags \"$at\" && _describe -t options option reply\n"
    "}\n\n"
    "# autoloaded from fpath: complete now; sourced (source <(gpulet completion zsh)): register\n"
    "if [[ $funcstack[1] == _gpulet ]]; then\n"
    "\t_gpulet \"$@\"\n"
    "else\n"
    "\tcompdef _gpulet %s\n"
    "fi\n";

static int write_script(const struct cmd_program *p, bool zsh)
{
	_cleanup_(cmd_tree_clear) struct cmd_tree t = {0};
	_cleanup_(data_clear) struct data d = {0};
	char *names = NULL, *aliases = NULL;
	size_t nlen, alen;
	FILE *nf, *af;
	int r = cmd_tree_load(p, &t);

	if (r < 0)
		return 1;
	if (data_build(&t, &d) < 0)
		return cmd_fail("completion", "out of memory");
	nf = open_memstream(&names, &nlen);
	af = open_memstream(&aliases, &alen);
	if (nf)
		emit_names(nf, p);
	if (af)
		emit_aliases(af, p, zsh ? "${words[1]:t}" : "${w[0]##*/}");
	names = text_end(nf, &names);
	aliases = text_end(af, &aliases);
	if (!names || !aliases) {
		free(names);
		free(aliases);
		return cmd_fail("completion", "out of memory");
	}
	if (zsh)
		printf("#compdef %s\n", names);
	printf("# %s completion for gpulet, written by `gpulet completion %s` from gpulet's option tables.\n",
	       zsh ? "zsh" : "bash", zsh ? "zsh" : "bash");
	printf("# %s\n\n", zsh ? "Install as _gpulet in a dir of $fpath, or: source <(gpulet completion zsh)"
			       : "Install in bash-completion's completions dir, or: source <(gpulet completion bash)");
	emit_data(stdout, &d);
	if (zsh) {
		emit_case(stdout, "_gpulet_zsub", "zsh: the sub-verbs of a path with their summaries.", &d.zsub,
			  "reply", "()");
		emit_case(stdout, "_gpulet_zflags", "zsh: the flags of a path with their help.", &d.zflags, "reply",
			  "()");
	}
	fputs(walk_fn, stdout);
	printf(zsh ? zsh_main : bash_main, aliases, names);
	free(names);
	free(aliases);
	return fflush(stdout) == 0 ? 0 : cmd_fail("completion", "cannot write the script");
}

static const struct optspec no_opts[] = {{0}};

static const struct shell {
	const char *name, *summary;
	struct cmd_verb verb;
	bool zsh;
} shells[] = {
    {"bash", "the bash completion script",
     CMD_VERB("completion bash", "", no_opts, "source <(gpulet completion bash)",
	      .about = "Write the bash completion script of gpulet (and of the upstream program names it answers\n"
		       "to) on stdout: source it, or install it as bash-completion's completions/gpulet."),
     false},
    {"zsh", "the zsh completion script",
     CMD_VERB("completion zsh", "", no_opts, "gpulet completion zsh > \"${fpath[1]}/_gpulet\"",
	      .about = "Write the zsh completion function of gpulet (and of the upstream program names it answers\n"
		       "to) on stdout: install it as _gpulet in a dir of $fpath, or source it after compinit."),
     true},
};

static void completion_help(FILE *f);
static const struct cmd_menu menu =
    CMD_MENU("gpulet completion", "shell", shells, completion_help, .summary_off = offsetof(struct shell, summary));

static void completion_help(FILE *f)
{
	fprintf(f, "Usage: gpulet completion SHELL\n\n"
		   "The completion script of a shell, written from gpulet's option tables (every command, option\n"
		   "and choice), as kubectl and helm write theirs.\n\nShells:\n");
	cmd_menu_list(&menu, f);
	fprintf(f, "\nExample:\n  source <(gpulet completion bash)\n");
}

int cmd_completion(const struct cmd_program *p, int argc, char **argv)
{
	struct cmd_common o = {0};
	const struct shell *s;
	int rc;

	s = cmd_menu_pick(&menu, argc - 1, argv + 1, &rc);
	if (!s)
		return rc;
	rc = cmd_parse(&s->verb, argc - 1, argv + 1, &o);
	return rc != CMD_CONTINUE ? rc : write_script(p, s->zsh);
}
