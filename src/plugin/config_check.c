/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Validation of plugin options: one typed setter every source (default, file, env, flag) goes
 * through, so a value is checked the same way wherever it comes from, and the rules that tie
 * options together. Sources: docs/reference/device-plugin.md §1-2.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/config_int.h"
#include "util/opt.h"

const char *const config_dls_names[4] = {"envvar", "volume-mounts", "cdi-annotations", "cdi-cri"};

static void *field(struct plugin_config *c, const struct opt *o)
{
	return (char *)c + o->off;
}

static bool choice_ok(const char *choices, const char *v, size_t vlen)
{
	for (const char *p = choices; p && *p;) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);

		if (n == vlen && strncmp(p, v, n) == 0)
			return true;
		p = bar ? bar + 1 : p + n;
	}
	return false;
}

/* True when a '/'-separated component of path is "..". */
static bool has_dotdot(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p += 2)
		if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return true;
	return false;
}

int config_opt_set(struct plugin_config *c, const struct opt *o, const char *v, const char *src, struct gerr *err)
{
	void *p = field(c, o);
	size_t len = strlen(v);

	switch (o->type) {
	case T_PATH:
		if (len && v[0] != '/')
			return gerr_set(err, EINVAL, "%s: %s must be an absolute path, got \"%s\"", src, o->flag, v);
		/* every host path is read under --root: a '..' would climb out of it */
		if (has_dotdot(v))
			return gerr_set(err, EINVAL,
					"%s: %s: path must not contain '..', got \"%s\"; give the real "
					"absolute path",
					src, o->flag, v);
		/* fall through */
	case T_STR:
		if (len >= o->size)
			return gerr_set(err, ENAMETOOLONG, "%s: %s is longer than %zu characters", src, o->flag,
					o->size - 1);
		memcpy(p, v, len + 1);
		return 0;
	case T_FILE:
		/* as upstream's os.Open: relative to the working directory; kept absolute, so a
		 * SIGHUP reload reads the same file */
		if (len && v[0] != '/') {
			char cwd[PATH_MAX];

			if (!getcwd(cwd, sizeof(cwd)))
				return gerr_set(err, errno, "%s: %s: cannot resolve the relative path \"%s\": %s", src,
						o->flag, v, strerror(errno));
			if ((size_t)snprintf(p, o->size, "%s/%s", cwd, v) >= o->size)
				return gerr_set(err, ENAMETOOLONG, "%s: %s is longer than %zu characters", src, o->flag,
						o->size - 1);
			return 0;
		}
		if (len >= o->size)
			return gerr_set(err, ENAMETOOLONG, "%s: %s is longer than %zu characters", src, o->flag,
					o->size - 1);
		memcpy(p, v, len + 1);
		return 0;
	case T_BOOL:
		if (opt_parse_bool(v, p) < 0)
			return gerr_set(err, EINVAL, "%s: %s must be true or false, got \"%s\"", src, o->flag, v);
		return 0;
	case T_ENUM: {
		const struct enum_name *row =
		    enum_row_by_name(o->names, o->n_names, sizeof(*o->names), offsetof(struct enum_name, value),
				     offsetof(struct enum_name, name), v, false);

		if (!row)
			return gerr_set(err, EINVAL, "%s: %s must be one of %s, got \"%s\"", src, o->flag, o->choices,
					v);
		*(int *)p = row->value;
		return 0;
	}
	case T_LEVEL:
		if (!choice_ok(o->choices, v, len) || len >= o->size)
			return gerr_set(err, EINVAL, "%s: %s must be one of %s, got \"%s\"", src, o->flag, o->choices,
					v);
		memcpy(p, v, len + 1);
		return 0;
	case T_DLS: {
		unsigned bits = 0;

		for (const char *s = v; *s;) {
			size_t n = strcspn(s, ",");
			size_t k;

			while (n && s[0] == ' ') {
				s++;
				n--;
			}
			for (k = 0; k < ELEMENTSOF(config_dls_names); k++)
				if (strlen(config_dls_names[k]) == n && strncmp(config_dls_names[k], s, n) == 0)
					break;
			if (k == ELEMENTSOF(config_dls_names))
				return gerr_set(err, EINVAL, "%s: %s: unknown strategy \"%.*s\"; valid: %s", src,
						o->flag, (int)n, s, o->choices);
			bits |= 1u << k;
			s += n;
			if (*s == ',')
				s++;
		}
		if (!bits)
			return gerr_set(err, EINVAL, "%s: %s must name at least one of %s", src, o->flag, o->choices);
		*(unsigned *)p = bits;
		return 0;
	}
	case T_SECONDS: {
		char *end;
		unsigned long n;

		errno = 0;
		n = strtoul(v, &end, 10);
		if (errno || end == v || *end || n < 1 || n > 86400)
			return gerr_set(err, EINVAL, "%s: %s must be a number of seconds from 1 to 86400, got \"%s\"",
					src, o->flag, v);
		*(unsigned *)p = (unsigned)n;
		return 0;
	}
	case T_IMEX:
		/* api/config/v1/imex.go: only [] or [0] */
		if (len && !streq(v, "0"))
			return gerr_set(err, EINVAL, "%s: %s: only channel 0 is supported, got \"%s\"", src, o->flag,
					v);
		memcpy(p, v, len + 1);
		return 0;
	case T_ACTION:
		break;
	}
	return -EINVAL;
}

void config_warn(struct plugin_config *c, const char *fmt, ...)
{
	_cleanup_free_ char *w = NULL;
	size_t l = strlen(c->warnings);
	char more[96];
	va_list ap;
	int n;

	if (c->warnings_full)
		return;
	/* room for this marker is always kept, so a full list says so instead of ending silently */
	snprintf(more, sizeof(more), "%smore warnings left out (the list is limited to %zu bytes)", l ? "; " : "",
		 sizeof(c->warnings));
	va_start(ap, fmt);
	n = vasprintf(&w, fmt, ap);
	va_end(ap);
	if (n < 0)
		w = NULL;
	if (w && l + 2 + (size_t)n + strlen(more) < sizeof(c->warnings)) {
		snprintf(c->warnings + l, sizeof(c->warnings) - l, "%s%s", l ? "; " : "", w);
		return;
	}
	snprintf(c->warnings + l, sizeof(c->warnings) - l, "%s", more);
	c->warnings_full = true;
}

const char *config_enum_name(const struct opt *o, int value)
{
	const struct enum_name *row =
	    enum_row_by_value(o->names, o->n_names, sizeof(*o->names), offsetof(struct enum_name, value), value);

	return row ? row->name : "?";
}

int config_validate(const struct plugin_config *c, struct gerr *err)
{
	/* the file is shared with labels, which takes vfio (GPUs passed through to VMs); the plugin does not */
	if (c->device_discovery_strategy == DISCOVERY_VFIO)
		return gerr_set(err, EINVAL,
				"--device-discovery-strategy=vfio is for labels (GPU Feature Discovery) only; "
				"the device plugin takes auto, nvml or tegra");
	if ((c->device_list_strategy & DLS_CDI_ANY) && c->device_discovery_strategy == DISCOVERY_TEGRA)
		return gerr_set(err, EINVAL,
				"CDI --device-list-strategy options are only supported on NVML-based systems; "
				"use envvar or volume-mounts with --device-discovery-strategy=tegra");
	if (c->sharing == SHARING_MPS && c->mig_strategy == MIG_STRATEGY_MIXED)
		return gerr_set(err, EINVAL, "MPS sharing is not supported with --mig-strategy=mixed");
	if (c->sharing == SHARING_MPS && !c->mps_root[0])
		return gerr_set(err, EINVAL, "using MPS requires --mps-root to be specified (e.g. /run/nvidia/mps)");
	return 0;
}
