/* SPDX-License-Identifier: Apache-2.0 */
/* Parsers of kubelet's command line as nodes keep it (docs/reference/kubelet-root-dir.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kube/kubeletcfg.h"
#include "parse/yaml.h"

#define KVAR_MAX 128 /* longest variable name we expand */

void kargv_done(struct kargv *a)
{
	for (size_t k = 0; k < a->n; k++)
		free(a->v[k]);
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

int kargv_add(struct kargv *a, const char *s, size_t len)
{
	char **nv;
	char *c;

	if (a->n >= KARGV_MAX)
		return -E2BIG;
	c = strndup(s, len);
	if (!c)
		return -ENOMEM;
	nv = realloc(a->v, (a->n + 1) * sizeof(*nv));
	if (!nv) {
		free(c);
		return -ENOMEM;
	}
	a->v = nv;
	a->v[a->n++] = c;
	return 0;
}

int kargv_from_nul(const char *buf, size_t len, struct kargv *ret)
{
	struct kargv a = {0};

	for (size_t k = 0; k < len;) {
		size_t l = strnlen(buf + k, len - k);
		int r = kargv_add(&a, buf + k, l);

		if (r < 0) {
			kargv_done(&a);
			return r;
		}
		k += l + 1;
	}
	*ret = a;
	return 0;
}

/* One word starting at *p (not a blank): unquoted into a growing buffer. */
static int split_word(const char **pp, char *out, size_t *out_len, struct gerr *err)
{
	const char *p = *pp;
	size_t n = 0;
	char quote = 0;

	for (; *p; p++) {
		if (quote) {
			if (*p == quote) {
				quote = 0;
				continue;
			}
			if (*p == '\\' && quote == '"' && p[1])
				p++;
		} else if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
			break;
		} else if (*p == '\'' || *p == '"') {
			quote = *p;
			continue;
		} else if (*p == '\\' && p[1]) {
			p++;
		}
		out[n++] = *p;
	}
	if (quote)
		return gerr_set(err, EINVAL, "unterminated %c quote", quote);
	*pp = p;
	*out_len = n;
	return 0;
}

int kargv_split(struct kargv *a, const char *text, bool comments, struct gerr *err)
{
	_cleanup_free_ char *word = malloc(strlen(text) + 1);
	const char *p = text;

	if (!word)
		return -ENOMEM;
	for (;;) {
		size_t n = 0;
		int r;

		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (!*p)
			return 0;
		if (comments && *p == '#') {
			p += strcspn(p, "\n");
			continue;
		}
		r = split_word(&p, word, &n, err);
		if (r >= 0)
			r = kargv_add(a, word, n);
		if (r == -E2BIG)
			return gerr_set(err, E2BIG, "more than %d words", KARGV_MAX);
		if (r < 0)
			return r;
	}
}

const char *kargv_flag(const struct kargv *a, const char *name)
{
	const char *v = NULL;
	size_t l = strlen(name);

	for (size_t k = 0; k < a->n; k++) {
		const char *w = a->v[k];

		if (strncmp(w, "--", 2) || strncmp(w + 2, name, l))
			continue;
		if (w[2 + l] == '=')
			v = w + 3 + l;
		else if (w[2 + l] == '\0' && k + 1 < a->n)
			v = a->v[++k];
	}
	return v;
}

/* One "KEY=VALUE" line of an env file, quotes removed, appended to a. */
static int env_line(struct kargv *a, const char *line, size_t len, struct gerr *err)
{
	_cleanup_free_ char *buf = malloc(len + 1);
	const char *eq = memchr(line, '=', len), *v, *end = line + len;
	size_t n;

	if (!buf)
		return -ENOMEM;
	if (!eq || eq == line || memchr(line, ' ', (size_t)(eq - line)))
		return gerr_set(err, EINVAL, "expected KEY=VALUE");
	n = (size_t)(eq - line) + 1;
	memcpy(buf, line, n);
	for (v = eq + 1; v < end && (*v == ' ' || *v == '\t'); v++)
		;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	if (v < end && (*v == '"' || *v == '\'')) {
		char q = *v++;

		for (; v < end && *v != q; v++) {
			if (*v == '\\' && q == '"' && v + 1 < end)
				v++;
			buf[n++] = *v;
		}
		if (v >= end)
			return gerr_set(err, EINVAL, "unterminated %c quote", q);
	} else {
		memcpy(buf + n, v, (size_t)(end - v));
		n += (size_t)(end - v);
	}
	return kargv_add(a, buf, n);
}

int kenv_parse(struct kargv *a, const char *name, const char *text, struct gerr *err)
{
	const char *p = text;

	for (unsigned line = 1; *p; line++) {
		size_t len = strcspn(p, "\n");
		const char *s = p;
		size_t l = len;
		int r = 0;

		while (l && (*s == ' ' || *s == '\t'))
			s++, l--;
		if (l >= 7 && !strncmp(s, "export ", 7))
			s += 7, l -= 7;
		while (l && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r'))
			l--;
		if (l && *s != '#' && *s != ';')
			r = env_line(a, s, l, err);
		if (r == -E2BIG)
			r = gerr_set(err, E2BIG, "more than %d assignments", KARGV_MAX);
		if (r < 0)
			return r == -ENOMEM ? r : gerr_prefix(err, "%s:%u: ", name, line);
		p += len + (p[len] == '\n');
	}
	return 0;
}

const char *kenv_get(const struct kargv *env, const char *key)
{
	size_t l = strlen(key);

	for (size_t k = env->n; k-- > 0;)
		if (!strncmp(env->v[k], key, l) && env->v[k][l] == '=')
			return env->v[k] + l + 1;
	return NULL;
}

void kunit_done(struct kunit *u)
{
	kargv_done(&u->env);
	kargv_done(&u->env_files);
	free(u->exec_start);
	u->exec_start = NULL;
}

/* One "Key=value" assignment of the [Service] section. */
static int unit_assign(struct kunit *u, const char *key, const char *val, struct gerr *err)
{
	if (streq(key, "ExecStart")) {
		char *s = *val ? strdup(val) : NULL;

		if (*val && !s)
			return -ENOMEM;
		free(u->exec_start);
		u->exec_start = s;
		return 0;
	}
	if (streq(key, "EnvironmentFile")) {
		if (!*val) {
			kargv_done(&u->env_files);
			return 0;
		}
		return kargv_add(&u->env_files, val, strlen(val));
	}
	if (streq(key, "Environment")) {
		if (!*val) {
			kargv_done(&u->env);
			return 0;
		}
		return kargv_split(&u->env, val, false, err);
	}
	return 0;
}

/* The next logical line (backslash-newline joined) into buf, trimmed; false at the end. */
static bool unit_line(const char **pp, char *buf, size_t size)
{
	const char *p = *pp;
	size_t n = 0;

	if (!*p)
		return false;
	for (;;) {
		size_t len = strcspn(p, "\n");
		bool cont = len && p[len - 1] == '\\';
		size_t take = cont ? len - 1 : len;

		if (n + take < size) {
			memcpy(buf + n, p, take);
			n += take;
		}
		p += len + (p[len] == '\n');
		if (!cont || !*p)
			break;
		if (n + 1 < size)
			buf[n++] = ' ';
	}
	while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r'))
		n--;
	buf[n] = '\0';
	*pp = p;
	return true;
}

int kunit_feed(struct kunit *u, const char *name, const char *text, struct gerr *err)
{
	size_t size = strlen(text) + 1;
	_cleanup_free_ char *line = malloc(size);
	const char *p = text;
	bool service = false;

	if (!line)
		return -ENOMEM;
	while (unit_line(&p, line, size)) {
		char *s = line, *eq, *k;
		int r;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			service = !strncmp(s, "[Service]", 9);
			continue;
		}
		eq = strchr(s, '=');
		if (!service || !eq)
			continue;
		for (k = eq; k > s && (k[-1] == ' ' || k[-1] == '\t'); k--)
			;
		*k = '\0';
		for (eq++; *eq == ' ' || *eq == '\t'; eq++)
			;
		r = unit_assign(u, s, eq, err);
		if (r < 0)
			return r == -ENOMEM ? r : gerr_prefix(err, "%s: %s=: ", name, s);
	}
	return 0;
}

/* Length of the variable reference at p ("$NAME" or "${NAME}"), its name in name; 0 when none. */
static size_t var_ref(const char *p, char *name)
{
	size_t l;

	if (p[0] != '$')
		return 0;
	if (p[1] == '{') {
		l = strcspn(p + 2, "}");
		if (!p[2 + l] || !l || l >= KVAR_MAX)
			return 0;
		snprintf(name, KVAR_MAX, "%.*s", (int)l, p + 2);
		return l + 3;
	}
	l = strspn(p + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
	if (!l || l >= KVAR_MAX)
		return 0;
	snprintf(name, KVAR_MAX, "%.*s", (int)l, p + 1);
	return l + 1;
}

/* text with references replaced; unknown ones kept when keep, else dropped (systemd: unset is empty). */
static int expand(const char *text, const struct kargv *vars, bool keep, char **ret)
{
	size_t cap = strlen(text) + 1, n = 0;
	char *out = malloc(cap);

	if (!out)
		return -ENOMEM;
	for (const char *p = text; *p;) {
		char name[KVAR_MAX];
		size_t l = var_ref(p, name);
		const char *v = l ? kenv_get(vars, name) : NULL;
		const char *add = v ? v : l && !keep ? "" : p;
		size_t alen = v || (l && !keep) ? strlen(add) : l ? l : 1;

		while (n + alen + 1 > cap) {
			char *no = cap <= (16u << 20) ? grow_alloc(out, &cap, 1, 64) : NULL;

			if (!no) {
				free(out);
				return cap > (16u << 20) ? -E2BIG : -ENOMEM;
			}
			out = no;
		}
		memcpy(out + n, add, alen);
		n += alen;
		p += l ? l : 1;
	}
	out[n] = '\0';
	*ret = out;
	return 0;
}

int kexpand(const char *text, const struct kargv *vars, char **ret)
{
	return expand(text, vars, true, ret);
}

int kunit_exec_argv(const char *exec_start, const struct kargv *env, struct kargv *ret, struct gerr *err)
{
	struct kargv words = {0}, out = {0};
	const char *p = exec_start;
	int r;

	p += strspn(p, "-@+!:");
	r = kargv_split(&words, p, false, err);
	for (size_t k = 0; r >= 0 && k < words.n; k++) {
		char name[KVAR_MAX];
		const char *w = words.v[k];
		size_t l = var_ref(w, name);

		if (l && w[l] == '\0' && w[1] != '{') { /* "$VAR": its words */
			const char *v = kenv_get(env, name);

			r = v ? kargv_split(&out, v, false, err) : 0;
		} else {
			_cleanup_free_ char *x = NULL;

			r = expand(w, env, false, &x);
			if (r >= 0)
				r = kargv_add(&out, x, strlen(x));
		}
	}
	kargv_done(&words);
	if (r < 0) {
		kargv_done(&out);
		return r;
	}
	*ret = out;
	return 0;
}

/* Append the items of one kubelet-arg value (a string or a list of scalars). */
static int add_items(struct kargv *list, const json_t *v)
{
	size_t i;
	const json_t *it;

	if (json_is_null(v)) /* "kubelet-arg:" with no value: an empty list */
		return 0;
	if (json_is_string(v))
		return kargv_add(list, json_string_value(v), json_string_length(v));
	if (!json_is_array(v))
		return -EINVAL;
	json_array_foreach ((json_t *)v, i, it) {
		int r;

		if (!json_is_string(it))
			return -EINVAL;
		r = kargv_add(list, json_string_value(it), json_string_length(it));
		if (r < 0)
			return r;
	}
	return 0;
}

int k3s_config_kubelet_args(struct kargv *list, const char *name, const char *text, size_t len, struct gerr *err)
{
	json_t *doc = NULL;
	const char *key;
	json_t *v;
	int r;

	r = yaml_to_json(text, len, name, 0, &doc, NULL, err);
	if (r < 0)
		return r;
	if (!json_is_object(doc) && !json_is_null(doc)) {
		json_decref(doc);
		return gerr_set(err, EINVAL, "%s: expected a YAML map of flag names", name);
	}
	json_object_foreach (doc, key, v) {
		if (streq(key, "kubelet-arg"))
			kargv_done(list);
		else if (!streq(key, "kubelet-arg+"))
			continue;
		r = add_items(list, v);
		if (r < 0)
			break;
	}
	json_decref(doc);
	if (r == -E2BIG)
		return gerr_set(err, E2BIG, "%s: more than %d kubelet-arg items", name, KARGV_MAX);
	if (r == -EINVAL)
		return gerr_set(err, EINVAL, "%s: kubelet-arg must be a string or a list of strings", name);
	return r;
}

const char *k3s_kubelet_arg(const struct kargv *list, const char *name)
{
	const char *v = NULL;
	size_t l = strlen(name);

	for (size_t k = 0; k < list->n; k++) {
		const char *w = list->v[k] + strspn(list->v[k], "-");

		if (!strncmp(w, name, l) && w[l] == '=')
			v = w + l + 1;
	}
	return v;
}
