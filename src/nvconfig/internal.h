/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the v1 file walker: what file.c (the document, the flags block) and sharing.c (the sharing
 * and resources sections) share. Not for other modules: they use nvconfig/nvconfig.h.
 */
#pragma once

#include <jansson.h>

#include "nvconfig/nvconfig.h"
#include "parse/yaml.h"

/* One walk over one document. */
struct walk {
	const char *name; /* the file, for messages */
	const struct yaml_where *w;
	const struct optspec_cli *cli; /* whose rows the option keys set */
	void *opts;
	struct nvconfig_file *out; /* the sharing section and the warnings */
	struct gerr *err;
};

/* A value of the document and where its text starts (what libyaml calls the node's start mark). */
struct yval {
	json_t *v;
	struct yaml_pos pos;
};

/* Member key of obj with where its value starts; {NULL} when absent. */
struct yval nv_member(const struct walk *y, const json_t *obj, const char *key);
/* -EINVAL with "name:line:col: key: what". */
int nv_err(struct walk *y, struct yaml_pos pos, const char *key, const char *fmt, ...) _printf_(4, 5);
/* A warning "name:line:col: what" (0, or -ENOMEM with err set). */
int nv_warn(struct walk *y, struct yaml_pos pos, const char *fmt, ...) _printf_(3, 4);
/* A warning for each key of map that known (NULL-terminated) lacks; -EINVAL when map is no mapping. */
int nv_warn_unknown(struct walk *y, struct yval map, const char *prefix, const char *const *known);
/* The text of a scalar (the reader typed it; options take text), or NULL for a collection. */
const char *nv_scalar(const json_t *v, char *buf, size_t size);

/* The sharing section (sharing.timeSlicing, sharing.mps) into y->out->sharing. */
int nv_sharing(struct walk *y, struct yval sharing);
/* The top-level resources section: checked as upstream checks it, then dropped with a warning. */
int nv_resources(struct walk *y, struct yval resources);
