/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which config a node gets: upstream's getConfigFileNameMap() and updateConfigName()
 * (k8s-device-plugin cmd/config-manager/main.go; docs/reference/config-manager.md §2).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nodeconfig/nodeconfig.h"
#include "util/enumtab.h"

static const struct enum_name fallback_names[] = {
    {NODECONFIG_FALLBACK_NAMED, "named"},
    {NODECONFIG_FALLBACK_SINGLE, "single"},
    {NODECONFIG_FALLBACK_EMPTY, "empty"},
};

static const char *const why_names[] = {
    [NODECONFIG_BY_LABEL] = "label", [NODECONFIG_BY_DEFAULT] = "default-config",
    [NODECONFIG_BY_NAMED] = "named", [NODECONFIG_BY_SINGLE] = "single",
    [NODECONFIG_BY_EMPTY] = "empty",
};

const char *nodeconfig_why_name(enum nodeconfig_why why)
{
	return (size_t)why < ELEMENTSOF(why_names) ? why_names[why] : "?";
}

int nodeconfig_fallbacks_parse(const char *text, struct nodeconfig_fallbacks *ret, struct gerr *err)
{
	struct nodeconfig_fallbacks fb = {0};
	const char *p = text ? text : "";

	/* urfave/cli splits at ',' and trims each item; an empty value is no strategy at all here */
	if (p[strspn(p, " \t")] == '\0') {
		*ret = fb;
		return 0;
	}
	for (;;) {
		size_t len = strcspn(p, ",");
		char word[32];
		int v;

		while (len && (*p == ' ' || *p == '\t'))
			p++, len--;
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == 0 || len >= sizeof(word) || fb.n == NODECONFIG_MAX_FALLBACKS)
			return gerr_set(err, EINVAL,
					"fallback strategies \"%s\": %s; the strategies are named, single and empty, "
					"separated by commas",
					text,
					fb.n == NODECONFIG_MAX_FALLBACKS ? "too many" : "an empty or too long item");
		memcpy(word, p, len);
		word[len] = '\0';
		if (enum_from_name(fallback_names, word, &v) < 0)
			return gerr_set(
			    err, EINVAL,
			    "fallback strategies \"%s\": unknown strategy \"%s\"; the strategies are named, "
			    "single and empty",
			    text, word);
		fb.v[fb.n++] = (enum nodeconfig_fallback)v;
		p += strcspn(p, ",");
		if (!*p)
			break;
		p++;
	}
	*ret = fb;
	return 0;
}

void nodeconfig_names_clear(struct nodeconfig_names *n)
{
	for (size_t i = 0; i < n->n; i++)
		free(n->v[i]);
	n->n = 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int nodeconfig_list(const char *dir, struct nodeconfig_names *ret, struct gerr *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int r = 0;

	*ret = (struct nodeconfig_names){0};
	if (!d)
		return gerr_set(err, errno, "cannot read the configs' dir %s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		struct stat st;

		/* "..data", "..2024_01_01..." and "." / "..": the ConfigMap volume's own entries */
		if (e->d_name[0] == '.' && (e->d_name[1] == '.' || e->d_name[1] == '\0'))
			continue;
		/* a key is a link into ..data: what it leads to must be a file */
		if (fstatat(dirfd(d), e->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (ret->n == NODECONFIG_MAX_NAMES) {
			r = gerr_set(err, E2BIG, "%s holds more than %d configs", dir, NODECONFIG_MAX_NAMES);
			break;
		}
		if (!(ret->v[ret->n] = strdup(e->d_name))) {
			r = gerr_set(err, ENOMEM, "out of memory");
			break;
		}
		ret->n++;
	}
	closedir(d);
	if (r < 0) {
		nodeconfig_names_clear(ret); /* nothing half-listed */
		return r;
	}
	if (ret->n > 0)
		qsort(ret->v, ret->n, sizeof(ret->v[0]), cmp_names);
	return 0;
}

static const char *find(const struct nodeconfig_names *names, const char *name)
{
	for (size_t i = 0; i < names->n; i++)
		if (names->v[i] && streq(names->v[i], name))
			return names->v[i];
	return NULL;
}

/* "a, b, c" of the names, for a message */
static void list_text(const struct nodeconfig_names *names, char *buf, size_t size)
{
	size_t l = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < names->n && l < size; i++)
		l += (size_t)snprintf(buf + l, size - l, "%s%s", i ? ", " : "", names->v[i]);
}

int nodeconfig_choose(const struct nodeconfig_names *names, const char *label, const char *default_config,
		      const struct nodeconfig_fallbacks *fb, const char **ret_name, enum nodeconfig_why *ret_why,
		      struct gerr *err)
{
	char have[512];
	const char *name;

	if (names->n == 0)
		return gerr_set(err, ENOENT, "no configuration files available");
	list_text(names, have, sizeof(have));
	/* the label names one: it must be there (no fallback then, as upstream) */
	if (label && *label) {
		if (!(name = find(names, label)))
			return gerr_set(err, ENOENT,
					"the node label names config \"%s\", which does not exist (configs: %s)", label,
					have);
		*ret_name = name;
		*ret_why = NODECONFIG_BY_LABEL;
		return 0;
	}
	if (default_config && *default_config) {
		if (!(name = find(names, default_config)))
			return gerr_set(err, ENOENT, "the default config \"%s\" does not exist (configs: %s)",
					default_config, have);
		*ret_name = name;
		*ret_why = NODECONFIG_BY_DEFAULT;
		return 0;
	}
	for (size_t i = 0; i < fb->n; i++) {
		name = fb->v[i] == NODECONFIG_FALLBACK_NAMED    ? find(names, NODECONFIG_NAMED)
		       : fb->v[i] == NODECONFIG_FALLBACK_SINGLE ? (names->n == 1 ? names->v[0] : NULL)
								: "";
		if (name) {
			*ret_name = name;
			*ret_why = fb->v[i] == NODECONFIG_FALLBACK_NAMED    ? NODECONFIG_BY_NAMED
				   : fb->v[i] == NODECONFIG_FALLBACK_SINGLE ? NODECONFIG_BY_SINGLE
									    : NODECONFIG_BY_EMPTY;
			return 0;
		}
	}
	return gerr_set(err, ENOENT,
			"no config was set, no default was provided, and all fallbacks failed (configs: %s; "
			"fallback strategies: %zu)",
			have, fb->n);
}
