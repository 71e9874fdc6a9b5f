/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apply-cuda-memory-limits up to the NVML call (docs/reference/cdi-hook.md §2.5): what the container
 * asked for (NVIDIA_GPU_MEMORY_REQUEST / NVIDIA_GPU_MEMORY_LIMIT in the bundle's config.json, in MiB)
 * and the container's cgroup v2 directory, the namespace NVML applies the limits to. The hook runs it
 * as a createRuntime hook, in the runtime's namespaces: /proc and /sys/fs/cgroup are the host's.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

#include "cdihook/cdihook.h"
#include "parse/json.h"
#include "util/fileio.h"

#define MIB                 (1024ull * 1024ull)
#define MEMLIMIT_MAX_MIB    (ULLONG_MAX / MIB) /* NVML_DEVICE_MEMORY_LIMIT_MAX in MiB, as upstream bounds it */
#define CGROUP2_SUPER_MAGIC 0x63677270
#define PROC_CGROUP_MAX     (64u << 10)

/*
 * The value of the first "KEY=" entry of process.env (what getenv in the container returns; upstream's
 * LookupEnv takes the first too). *ret NULL when the key is not there; an entry "KEY" without '=' is
 * the empty value. Borrowed from doc.
 */
static int lookup_env(const char *name, const json_t *doc, const char *key, const char **ret, struct gerr *err)
{
	const json_t *env = json_object_get(json_object_get(doc, "process"), "env"), *e;
	size_t i, klen = strlen(key);

	*ret = NULL;
	if (env && !json_is_array(env))
		return gerr_set(err, EINVAL, "%s: \"process.env\" is not an array", name);
	json_array_foreach (env, i, e) {
		const char *s = json_string_value(e);

		if (!s)
			return gerr_set(err, EINVAL, "%s: process.env[%zu] is not a string", name, i);
		if (strncmp(s, key, klen) != 0 || (s[klen] != '=' && s[klen] != '\0'))
			continue;
		*ret = s[klen] == '=' ? s + klen + 1 : "";
		return 0;
	}
	return 0;
}

/* A whole number of MiB as Go's strconv.ParseUint(v, 10, 64) reads it, at most MEMLIMIT_MAX_MIB. */
static int parse_mib(const char *var, const char *v, unsigned long long *ret, struct gerr *err)
{
	unsigned long long n = 0;
	char q[GERR_QUOTE_MAX];

	if (!*v)
		return gerr_set(err, EINVAL, "%s is empty; give a whole number of MiB, e.g. %s=4096", var, var);
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return gerr_set(err, EINVAL, "%s=%s is not a whole number of MiB (digits only, e.g. %s=4096)",
					var, gerr_quote(v, q), var);
		if (n > (MEMLIMIT_MAX_MIB - (unsigned long long)(*p - '0')) / 10)
			return gerr_set(err, ERANGE, "%s=%s MiB exceeds the largest limit NVML takes, %llu MiB", var,
					gerr_quote(v, q), (unsigned long long)MEMLIMIT_MAX_MIB);
		n = n * 10 + (unsigned long long)(*p - '0');
	}
	*ret = n;
	return 0;
}

int cdihook_memlimits_from_config(const char *name, const char *text, size_t len, struct cdihook_memlimits *ret,
				  struct gerr *err)
{
	json_t *doc = NULL;
	const char *req = NULL, *lim = NULL;
	unsigned long long req_mib = 0, lim_mib = 0;
	int r = json_parse_object(name, "the bundle's config.json", text, len, &doc, err);

	if (r < 0)
		return r;
	r = lookup_env(name, doc, CDIHOOK_MEM_REQUEST_ENV, &req, err);
	if (r >= 0)
		r = lookup_env(name, doc, CDIHOOK_MEM_LIMIT_ENV, &lim, err);
	if (r >= 0 && req)
		r = parse_mib(CDIHOOK_MEM_REQUEST_ENV, req, &req_mib, err);
	if (r >= 0 && lim)
		r = parse_mib(CDIHOOK_MEM_LIMIT_ENV, lim, &lim_mib, err);
	json_decref(doc);
	if (r < 0)
		return r;
	*ret = (struct cdihook_memlimits){.wanted = req || lim};
	if (!ret->wanted)
		return 0;
	/* upstream: no limit = NVML's "none" (all bits set); no request = the limit */
	ret->limit = lim ? lim_mib * MIB : ULLONG_MAX;
	ret->request = req ? req_mib * MIB : ret->limit;
	if (ret->request > ret->limit)
		return gerr_set(err, EINVAL, "%s=%llu MiB exceeds %s=%llu MiB; the request must not exceed the limit",
				CDIHOOK_MEM_REQUEST_ENV, (unsigned long long)req_mib, CDIHOOK_MEM_LIMIT_ENV,
				(unsigned long long)lim_mib);
	return 0;
}

/* CDIHOOK_CGROUP_ROOT + the unified path rel (n bytes), cleaned; a ".." component is refused, never resolved. */
static int join_cgroup(const char *name, const char *rel, size_t n, char **ret, struct gerr *err)
{
	_cleanup_free_ char *copy = strndup(rel, n), *path = NULL;
	char *save = NULL, *c;
	size_t k;

	path = malloc(strlen(CDIHOOK_CGROUP_ROOT) + n + 2);
	if (!copy || !path)
		return gerr_set(err, ENOMEM, "out of memory");
	k = (size_t)sprintf(path, "%s", CDIHOOK_CGROUP_ROOT);
	for (c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (streq(c, ".."))
			return gerr_set(err, EINVAL, "%s: the cgroup path has a '..' component; refusing it", name);
		if (!streq(c, "."))
			k += (size_t)sprintf(path + k, "/%s", c);
	}
	*ret = TAKE_PTR(path);
	return 0;
}

int cdihook_cgroup_path(const char *name, const char *text, char **ret, struct gerr *err)
{
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);

		/* upstream trims each line and takes the first "0::" one (cgroup_path.go) */
		while (n && (*line == ' ' || *line == '\t' || *line == '\r'))
			line++, n--;
		while (n && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
			n--;
		if (n >= 3 && strncmp(line, "0::", 3) == 0)
			return join_cgroup(name, line + 3, n - 3, ret, err);
		line = end ? end + 1 : NULL;
	}
	return gerr_set(err, ENOENT,
			"%s has no cgroup v2 entry (\"0::/...\"); setting GPU memory limits needs the unified (v2) "
			"cgroup hierarchy",
			name);
}

int cdihook_memlimits_read(const struct oci_state *s, const char *proc, struct cdihook_memlimits *ret, struct gerr *err)
{
	_cleanup_free_ char *config = NULL, *text = NULL, *cg = NULL, *cgtext = NULL;
	struct cdihook_memlimits m = {0};
	struct statfs sf;
	size_t len;
	int r;

	if (!s->bundle || s->bundle[0] != '/')
		return gerr_set(err, EINVAL,
				"the OCI state has no absolute \"bundle\"; the container's config.json (where "
				"%s and %s are) cannot be read",
				CDIHOOK_MEM_REQUEST_ENV, CDIHOOK_MEM_LIMIT_ENV);
	if (asprintf(&config, "%s/config.json", s->bundle) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	/* upstream skips the hook when config.json does not load; a limit asked for must not be lost */
	r = read_file(config, OCI_CONFIG_MAX, &text, &len, NULL);
	if (r < 0)
		return gerr_set(err, -r, "reading %s for %s and %s: %s", config, CDIHOOK_MEM_REQUEST_ENV,
				CDIHOOK_MEM_LIMIT_ENV, strerror(-r));
	r = cdihook_memlimits_from_config(config, text, len, &m, err);
	if (r < 0 || !m.wanted) {
		*ret = m;
		return r;
	}
	if (statfs(CDIHOOK_CGROUP_ROOT, &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC)
		return gerr_set(err, EOPNOTSUPP,
				"%s or %s is set, but %s is not the cgroup v2 (unified) hierarchy: GPU memory limits "
				"are set per cgroup v2 only; boot the node with systemd.unified_cgroup_hierarchy=1 "
				"or unset the variables",
				CDIHOOK_MEM_REQUEST_ENV, CDIHOOK_MEM_LIMIT_ENV, CDIHOOK_CGROUP_ROOT);
	if (s->pid <= 0)
		return gerr_set(err, EINVAL,
				"the OCI state has no \"pid\"; run this as a createRuntime hook (the runtime passes "
				"the container's pid)");
	if (asprintf(&cg, "%s/%d/cgroup", proc ? proc : "/proc", (int)s->pid) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	r = read_file(cg, PROC_CGROUP_MAX, &cgtext, NULL, NULL);
	if (r < 0)
		return gerr_set(err, -r, "reading %s (the container's cgroup): %s", cg, strerror(-r));
	r = cdihook_cgroup_path(cg, cgtext, &m.cgroup, err);
	if (r < 0)
		return r;
	*ret = m;
	return 0;
}

void cdihook_memlimits_clear(struct cdihook_memlimits *m)
{
	free(m->cgroup);
	*m = (struct cdihook_memlimits){0};
}
