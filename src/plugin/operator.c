/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU Operator's device-plugin entrypoint, read (operator.h). Facts: docs/reference/operator.md
 * §3 (gpu-operator assets/state-device-plugin/0400_configmap.yaml, v24.6.0 to v26.7.0;
 * cmd/nvidia-validator/main.go createStatusFile()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/operator.h"
#include "util/macro.h"

const struct operator_module operator_modules[] = {
    {"gdrdrv", {"GDRCOPY_ENABLED", NULL}},
    {"nvidia_fs", {"GDS_ENABLED", "MOFED_ENABLED"}},
};
const size_t operator_n_modules = ELEMENTSOF(operator_modules);

const char *const operator_ready_names[OPERATOR_READY_VARS] = {
    "IS_HOST_DRIVER", "NVIDIA_DRIVER_ROOT", "DRIVER_ROOT_CTR_PATH", "NVIDIA_DEV_ROOT", "DEV_ROOT_CTR_PATH"};

/* -- the script -------------------------------------------------------------------------------- */

#define MAX_TOKENS 12
#define MAX_TOKEN  256

/* What a statement means to gpulet; the rest are structure or output it need not act on. */
enum stmt { S_NONE, S_WAIT, S_ALLEXPORT, S_SOURCE, S_MODULES, S_EXEC };

/*
 * Every statement of the Operator's entrypoint scripts, as tokens after quote removal. A token may
 * hold one class: %N digits, %R the driver-ready path, %M a module name, %F a variable of
 * operator_modules[], %L a blank-separated module list; "%T" alone is the rest of an echo's words.
 */
static const struct {
	const char *pattern;
	enum stmt what;
} statements[] = {
    {"until [ -f %R ]", S_WAIT},
    {"until [[ -f %R ]]", S_WAIT}, /* v24.6 to v25.3, run by bash */
    {"do", S_NONE},
    {"done", S_NONE},
    {"then", S_NONE},
    {"fi", S_NONE},
    {"esac", S_NONE},
    {";;", S_NONE},
    {"sleep %N", S_NONE},
    {"set -o allexport", S_ALLEXPORT},
    {"cat %R", S_NONE},
    {". %R", S_SOURCE},
    {"> feature-flags.env", S_NONE},
    {"echo %F=true >> feature-flags.env", S_NONE},
    {"echo %T", S_NONE},
    {"if [ -s feature-flags.env ]", S_NONE},
    {"cat feature-flags.env", S_NONE},
    {". ./feature-flags.env", S_NONE},
    {"extra_modules=%L", S_MODULES},
    {"for module in ${extra_modules}", S_NONE},
    {"if lsmod | grep -q ^$module ", S_NONE},
    {"case $module in", S_NONE},
    {"%M)", S_NONE},
    {"if [ -z $%F ]", S_NONE},
    {"exec nvidia-device-plugin", S_EXEC},
};

struct tokens {
	char v[MAX_TOKENS][MAX_TOKEN];
	size_t n;
};

static int module_index(const char *s, size_t len)
{
	for (size_t i = 0; i < operator_n_modules; i++)
		if (strlen(operator_modules[i].name) == len && !memcmp(operator_modules[i].name, s, len))
			return (int)i;
	return -1;
}

static bool is_module_var(const char *s, size_t len)
{
	for (size_t i = 0; i < operator_n_modules; i++)
		for (size_t k = 0; k < ELEMENTSOF(operator_modules[i].vars) && operator_modules[i].vars[k]; k++)
			if (strlen(operator_modules[i].vars[k]) == len && !memcmp(operator_modules[i].vars[k], s, len))
				return true;
	return false;
}

/* s[0..len) as class c; *bits gets the modules a %M or %L names. */
static bool class_match(char c, const char *s, size_t len, unsigned *bits)
{
	int m;

	switch (c) {
	case 'N':
		return len > 0 && len <= 4 && strspn(s, "0123456789") >= len;
	case 'R':
		return len == strlen(OPERATOR_DRIVER_READY) && !memcmp(s, OPERATOR_DRIVER_READY, len);
	case 'F':
		return is_module_var(s, len);
	case 'M':
		if ((m = module_index(s, len)) < 0)
			return false;
		*bits |= 1u << m;
		return true;
	case 'L':
		for (size_t i = 0; i < len;) {
			size_t w = 0;

			while (i + w < len && s[i + w] != ' ')
				w++;
			if (w && (m = module_index(s + i, w)) < 0)
				return false;
			if (w)
				*bits |= 1u << m;
			i += w + 1;
		}
		return true;
	default:
		return false;
	}
}

/* One pattern token against one token: literal prefix, an optional %class, literal suffix. */
static bool token_match(const char *pat, size_t plen, const char *tok, unsigned *bits)
{
	const char *pc = memchr(pat, '%', plen);
	size_t tl = strlen(tok), pre, suf;

	if (!pc)
		return plen == tl && !memcmp(pat, tok, tl);
	pre = (size_t)(pc - pat);
	suf = plen - pre - 2;
	if (pre + 2 > plen || tl < pre + suf || memcmp(tok, pat, pre) || memcmp(tok + tl - suf, pc + 2, suf))
		return false;
	return class_match(pc[1], tok + pre, tl - pre - suf, bits);
}

/* The words of an echo are output only; an operator among them would do something else. */
static bool plain_words(const struct tokens *t, size_t from)
{
	static const char *const ops[] = {"|", "||", "&", "&&", ">", ">>", "<", "<<"};

	for (size_t i = from; i < t->n; i++)
		for (size_t k = 0; k < ELEMENTSOF(ops); k++)
			if (streq(t->v[i], ops[k]))
				return false;
	return true;
}

/* The statement of statements[] t is, or -1. */
static int classify(const struct tokens *t, unsigned *bits)
{
	for (size_t s = 0; s < ELEMENTSOF(statements); s++) {
		const char *p = statements[s].pattern;
		unsigned b = 0;
		size_t i = 0;

		for (; *p && i < t->n; i++) {
			/* a pattern token ends at a blank, except inside the one class that holds a trailing blank */
			size_t plen = strcspn(p, " ");

			if (plen == 2 && !memcmp(p, "%T", 2))
				return plain_words(t, i) ? (int)s : -1;
			if (!strncmp(p, "^$module ", 9))
				plen = 9;
			if (!token_match(p, plen, t->v[i], &b))
				break;
			p += plen;
			p += *p == ' ';
		}
		if (!*p && i == t->n) {
			*bits |= b;
			return (int)s;
		}
	}
	return -1;
}

/*
 * The statements of one line: tokens split at unquoted blanks, quotes removed, the operators ";;"
 * "|" "||" "&" "&&" "<" "<<" ">" ">>" tokens of their own. One callback per statement (split at ";"). -EINVAL for what
 * a script of the Operator never has: a backslash, a back quote, "$(", an unclosed quote, too many or too long tokens.
 */
struct line_ctx {
	const char *file;
	unsigned line;
	struct operator_script *out;
	bool waited, allexport, sourced, exec;
};

static int statement(struct line_ctx *c, struct tokens *t, struct gerr *err)
{
	unsigned bits = 0;
	int s;

	/* `do sleep 5`, `then echo x`: the reserved word, then a statement of its own */
	while (t->n > 1 && (streq(t->v[0], "do") || streq(t->v[0], "then"))) {
		memmove(t->v, t->v + 1, (t->n - 1) * sizeof(t->v[0]));
		t->n--;
	}
	if (!t->n)
		return 0;
	if (c->exec)
		return gerr_set(err, EINVAL, "%s:%u: '%s' after 'exec nvidia-device-plugin'", c->file, c->line,
				t->v[0]);
	if ((s = classify(t, &bits)) < 0)
		return gerr_set(err, EINVAL,
				"%s:%u: '%s%s' is not a statement of the GPU Operator's device-plugin entrypoint",
				c->file, c->line, t->v[0], t->n > 1 ? " ..." : "");
	switch (statements[s].what) {
	case S_WAIT:
		c->waited = true;
		break;
	case S_ALLEXPORT:
		c->allexport = true;
		break;
	case S_SOURCE:
		if (!c->waited || !c->allexport)
			return gerr_set(err, EINVAL, "%s:%u: the driver-ready file is read before %s", c->file, c->line,
					c->waited ? "'set -o allexport'" : "it is waited for");
		c->sourced = true;
		break;
	case S_MODULES:
		c->out->checks_modules = true;
		c->out->modules = bits;
		break;
	case S_EXEC:
		if (!c->sourced)
			return gerr_set(err, EINVAL,
					"%s:%u: nvidia-device-plugin is started before the driver-ready file is read",
					c->file, c->line);
		c->exec = true;
		break;
	case S_NONE:
		break;
	}
	return 0;
}

static int add_char(struct tokens *t, size_t *len, char ch, const struct line_ctx *c, struct gerr *err)
{
	if (t->n >= MAX_TOKENS || *len + 1 >= MAX_TOKEN)
		return gerr_set(err, EINVAL, "%s:%u: line too long", c->file, c->line);
	t->v[t->n][(*len)++] = ch;
	t->v[t->n][*len] = '\0';
	return 0;
}

static void end_token(struct tokens *t, size_t *len, bool *open)
{
	if (*open)
		t->n++;
	*open = false;
	*len = 0;
}

static int scan_line(struct line_ctx *c, const char *s, size_t n, struct gerr *err)
{
	struct tokens t = {.n = 0};
	size_t len = 0;
	bool open = false;
	char q = 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '\\' || ch == '`' || (ch == '$' && i + 1 < n && s[i + 1] == '(') || ch == '\0')
			return gerr_set(err, EINVAL,
					"%s:%u: '%c': no substitution or escape is in the Operator's entrypoint",
					c->file, c->line, ch ? ch : '0');
		if (q) {
			if (ch == q)
				q = 0;
			else if ((r = add_char(&t, &len, ch, c, err)) < 0)
				return r;
			continue;
		}
		if (ch == '"' || ch == '\'') {
			q = ch;
			open = true; /* "" is a token */
			if (t.n >= MAX_TOKENS)
				return gerr_set(err, EINVAL, "%s:%u: line too long", c->file, c->line);
			t.v[t.n][len] = '\0';
		} else if (ch == ' ' || ch == '\t' || ch == '\r') {
			end_token(&t, &len, &open);
		} else if (strchr(";|&<>", ch)) {
			bool twice = i + 1 < n && s[i + 1] == ch;

			end_token(&t, &len, &open);
			if (ch == ';' && !twice) {
				if ((r = statement(c, &t, err)) < 0)
					return r;
				t.n = 0;
				continue;
			}
			for (int k = 0; k <= twice; k++)
				if ((r = add_char(&t, &len, ch, c, err)) < 0)
					return r;
			i += twice;
			open = true;
			end_token(&t, &len, &open);
		} else {
			if ((r = add_char(&t, &len, ch, c, err)) < 0)
				return r;
			open = true;
		}
	}
	if (q)
		return gerr_set(err, EINVAL, "%s:%u: unclosed quote", c->file, c->line);
	end_token(&t, &len, &open);
	return statement(c, &t, err);
}

int operator_script_check(const char *text, size_t len, const char *file, struct operator_script *ret, struct gerr *err)
{
	struct operator_script out = {0};
	struct line_ctx c = {.file = file, .out = &out};
	int r;

	if (len > OPERATOR_SCRIPT_MAX)
		return gerr_set(err, EFBIG, "%s: larger than %d bytes", file, OPERATOR_SCRIPT_MAX);
	for (size_t at = 0; at < len;) {
		const char *s = text + at, *nl = memchr(s, '\n', len - at);
		size_t n = nl ? (size_t)(nl - s) : len - at, skip = strspn(s, " \t");

		c.line++;
		at += n + 1;
		if (skip >= n || s[skip] == '#')
			continue;
		if ((r = scan_line(&c, s + skip, n - skip, err)) < 0)
			return r;
	}
	if (!c.exec)
		return gerr_set(err, EINVAL, "%s: does not end with 'exec nvidia-device-plugin'", file);
	*ret = out;
	return 0;
}

/* -- the driver-ready file --------------------------------------------------------------------- */

void operator_ready_clear(struct operator_ready *r)
{
	for (size_t i = 0; i < OPERATOR_READY_VARS; i++) {
		free(r->value[i]);
		r->value[i] = NULL;
	}
}

/* Characters a value may hold: what the validator writes (paths, true/false), one shell word. */
static const char value_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+:@,=%-";

int operator_ready_parse(const char *text, size_t len, const char *file, struct operator_ready *ret, struct gerr *err)
{
	struct operator_ready out = {{0}};
	unsigned line = 0;

	if (len > OPERATOR_READY_MAX)
		return gerr_set(err, EFBIG, "%s: larger than %d bytes", file, OPERATOR_READY_MAX);
	for (size_t at = 0; at < len;) {
		const char *s = text + at, *nl = memchr(s, '\n', len - at), *eq;
		size_t n = nl ? (size_t)(nl - s) : len - at, k;

		line++;
		at += n + 1;
		if (!n)
			continue;
		eq = memchr(s, '=', n);
		for (k = 0; eq && k < OPERATOR_READY_VARS; k++)
			if (strlen(operator_ready_names[k]) == (size_t)(eq - s) &&
			    !memcmp(s, operator_ready_names[k], eq - s))
				break;
		if (!eq || k == OPERATOR_READY_VARS) {
			operator_ready_clear(&out);
			return gerr_set(
			    err, EINVAL,
			    "%s:%u: not a NAME=VALUE line of a variable the GPU Operator's validator writes (%s, "
			    "%s, %s, %s, %s)",
			    file, line, operator_ready_names[0], operator_ready_names[1], operator_ready_names[2],
			    operator_ready_names[3], operator_ready_names[4]);
		}
		n -= (size_t)(eq + 1 - s);
		if (strspn(eq + 1, value_chars) < n || memchr(eq + 1, '\0', n)) {
			operator_ready_clear(&out);
			return gerr_set(err, EINVAL,
					"%s:%u: the value of %s holds a character a shell would not read as one word",
					file, line, operator_ready_names[k]);
		}
		free(out.value[k]); /* sourced again: the last one wins */
		if (!(out.value[k] = strndup(eq + 1, n))) {
			operator_ready_clear(&out);
			return gerr_set(err, ENOMEM, "out of memory");
		}
	}
	*ret = out;
	return 0;
}

/* -- /proc/modules ----------------------------------------------------------------------------- */

unsigned operator_modules_loaded(const char *proc_modules, unsigned wanted)
{
	unsigned found = 0;

	for (const char *l = proc_modules; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = strcspn(l, " \n");
		int m = module_index(l, n);

		/* "^name ": the name and a blank, at the start of a line */
		if (m >= 0 && l[n] == ' ' && (wanted & (1u << m)))
			found |= 1u << m;
		l = nl ? nl + 1 : NULL;
	}
	return found;
}
