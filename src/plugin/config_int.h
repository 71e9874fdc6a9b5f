/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the plugin configuration: the option row type shared by config.c (the table, flags, env,
 * layers), config_check.c (one typed setter and the cross-option rules) and config_file.c (the
 * v1 file). Not for other modules: they use plugin/config.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "plugin/config.h"
#include "util/macro.h"

#define REPLICAS_MAX     1024 /* bound on time-slicing replicas per device */
#define MPS_REPLICAS_MAX 48   /* mps/device.go: 48 for compute capability >= 7.5 */

enum opt_type {
	T_STR,     /* free string, bounded by the field */
	T_PATH,    /* absolute path or "" */
	T_FILE,    /* a path read as given, not under --root; a relative one is made absolute from the cwd */
	T_BOOL,    /* opt_parse_bool(): Go strconv.ParseBool spellings */
	T_ENUM,    /* one of .names, stored as its int value */
	T_DLS,     /* comma list of device list strategies -> DLS_* bits */
	T_IMEX,    /* int list; only [] or [0] are valid upstream */
	T_LEVEL,   /* log level */
	T_SECONDS, /* unsigned seconds within [1, 86400] */
	T_ACTION,  /* command line only, no value: --help, --print-config */
};

struct opt {
	const char *flag;
	const char *alias;
	const char *env[2];
	const char *key; /* config-file key; NULL: command line and env only */
	enum opt_type type;
	const char *def;
	size_t off, size;
	const char *choices;
	const char *help;
	const struct enum_name *names; /* T_ENUM: the words and their values */
	size_t n_names;
};
#define OPT_NAMES(t) (t), ELEMENTSOF(t)

/* --device-list-strategy names, bit k of DLS_* is config_dls_names[k]. */
extern const char *const config_dls_names[4];

/* The row whose config-file key is key ("flags.migStrategy"), or NULL. */
const struct opt *config_opt_by_key(const char *key);

/* Set one option from text; src says where the text came from ("--flag", "env X", "file:l:c"). */
int config_opt_set(struct plugin_config *c, const struct opt *o, const char *v, const char *src, struct gerr *err);

/* The word of a T_ENUM row's value. */
const char *config_enum_name(const struct opt *o, int value);

/* Append a warning (unknown key, ignored section) to c->warnings. */
void config_warn(struct plugin_config *c, const char *fmt, ...) _printf_(2, 3);

/* The rules that tie options together (as upstream's validation after loading). */
int config_validate(const struct plugin_config *c, struct gerr *err);
