/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to src/cdi/: what its files share. The public API is cdi.h.
 *   spec_version.c  version table, runtimes, minimum version per feature, name syntax
 *   generate.c  cdi_generate()
 *   spec.c      format, parse, read, write spec files
 *   validate.c  problem codes, field tables, cdi_validate_spec()
 *   scan.c      files and spec dirs as a runtime scans them, duplicates, cdi_list_dirs()
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cdi/cdi.h"

#define CDI_SPEC_MAX         (16u << 20) /* a spec larger than this is not a CDI spec */
#define CDI_MARKER_ENV       "GPULET_CDI_SPEC"
#define CDI_EARLIEST_VERSION "0.3.0" /* the Go library refuses anything older */

/* json_object_set_new / json_array_append_new that report -ENOMEM (they consume v either way). */
static inline int jset(json_t *o, const char *k, json_t *v)
{
	return v && json_object_set_new(o, k, v) == 0 ? 0 : -ENOMEM;
}

static inline int jpush(json_t *a, json_t *v)
{
	return v && json_array_append_new(a, v) == 0 ? 0 : -ENOMEM;
}

static inline bool cdi_has_ext(const char *name, const char *ext)
{
	size_t a = strlen(name), b = strlen(ext);

	return a > b && streq(name + a - b, ext);
}

/* ---- spec_version.c ---- */

/* "v1.2.3" or "1.2.3" → numbers; -EINVAL for anything else. */
int cdi_parse_version(const char *s, unsigned v[3]);
int cdi_version_cmp(const char *a, const char *b);
bool cdi_version_known(const char *s);
bool cdi_runtime_refuses_v_prefix(const char *runtime_name, const char *runtime_version);

/* The newest feature a spec uses, and the cdiVersion it needs. */
struct cdi_version_rule {
	const char *version;
	bool (*needs)(const json_t *spec);
	const char *what;
};
const struct cdi_version_rule *cdi_min_version_rule(const json_t *spec);

/* pkg/parser name syntax: alnum (or a letter) first, alnum last, middle_extra allowed inside. */
bool cdi_name_chars(const char *s, const char *middle_extra, bool letter_first);

/* ---- validate.c ---- */

struct cdi_vctx {
	const struct cdi_validate_options *o;
	struct cdi_report *rep;
	const char *file;
	int oom;
	const char *version; /* the spec's cdiVersion when valid, else NULL */
};

/* Rename case variants of the spec's keys to its spelling, as Go's JSON decoding reads them;
 * each is a "key-case" warning in v (NULL: quietly). -ENOMEM only. */
int cdi_canonical_keys(struct cdi_vctx *v, json_t *spec);

/* Append a problem with code (a row of validate.c's table) at path; fix NULL = the row's fix. */
void cdi_problem(struct cdi_vctx *v, const char *code, const char *path, const char *fix, const char *fmt, ...)
    _printf_(5, 6);
