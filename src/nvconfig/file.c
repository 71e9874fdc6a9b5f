/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The v1 file walker: the document, and its flags.* and imex.* values handed to a reader's option
 * rows. The text is read by the one YAML reader (parse/yaml.h), which types scalars as
 * sigs.k8s.io/yaml does for the upstream programs and says where each value starts; errors name
 * file:line:col and the key, unknown keys are warnings. Source: docs/reference/device-plugin.md §2.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvconfig/internal.h"
#include "util/fileio.h"

const char *const nvconfig_keys[24] = {
    NVCONFIG_KEY_MIG_STRATEGY,
    NVCONFIG_KEY_FAIL_ON_INIT_ERROR,
    NVCONFIG_KEY_MPS_ROOT,
    NVCONFIG_KEY_DRIVER_ROOT,
    NVCONFIG_KEY_DEV_ROOT,
    NVCONFIG_KEY_GDRCOPY_ENABLED,
    NVCONFIG_KEY_GDS_ENABLED,
    NVCONFIG_KEY_MOFED_ENABLED,
    NVCONFIG_KEY_USE_NODE_FEATURE_API,
    NVCONFIG_KEY_DISCOVERY_STRATEGY,
    NVCONFIG_KEY_PASS_DEVICE_SPECS,
    NVCONFIG_KEY_DEVICE_LIST_STRATEGY,
    NVCONFIG_KEY_DEVICE_ID_STRATEGY,
    NVCONFIG_KEY_CDI_ANNOTATION_PREFIX,
    NVCONFIG_KEY_NVIDIA_CTK_PATH,
    NVCONFIG_KEY_CTR_DRIVER_ROOT,
    NVCONFIG_KEY_SHARED_DEVICES_ALLOC_POLICY,
    NVCONFIG_KEY_GFD_ONESHOT,
    NVCONFIG_KEY_GFD_NO_TIMESTAMP,
    NVCONFIG_KEY_GFD_SLEEP_INTERVAL,
    NVCONFIG_KEY_GFD_OUTPUT_FILE,
    NVCONFIG_KEY_GFD_MACHINE_TYPE_FILE,
    NVCONFIG_KEY_IMEX_CHANNEL_IDS,
    NVCONFIG_KEY_IMEX_REQUIRED,
};

struct yval nv_member(const struct walk *y, const json_t *obj, const char *key)
{
	struct yval r = {json_object_get(obj, key), {0, 0}};

	if (r.v)
		yaml_where_value(y->w, obj, key, &r.pos);
	return r;
}

int nv_err(struct walk *y, struct yaml_pos pos, const char *key, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return gerr_set(y->err, EINVAL, "%s:%u:%u: %s: %s", y->name, pos.line, pos.col, key, buf);
}

int nv_warn(struct walk *y, struct yaml_pos pos, const char *fmt, ...)
{
	_cleanup_free_ char *what = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&what, fmt, ap);
	va_end(ap);
	/* every warning is kept: the file is at most 1 MiB, so is the list within a bound */
	if (n < 0 || warnings_add(&y->out->warnings, "%s:%u:%u: %s", y->name, pos.line, pos.col, what) < 0)
		return gerr_set(y->err, ENOMEM, "out of memory");
	return 0;
}

int nv_warn_unknown(struct walk *y, struct yval map, const char *prefix, const char *const *known)
{
	const char *k;
	json_t *v;

	if (!json_is_object(map.v))
		return nv_err(y, map.pos, prefix, "expected a mapping");
	json_object_foreach (map.v, k, v) {
		struct yaml_pos kp = map.pos;
		bool ok = false;
		int r;

		for (size_t i = 0; known[i] && !ok; i++)
			ok = streq(known[i], k);
		if (ok)
			continue;
		yaml_where_key(y->w, map.v, k, &kp);
		r = nv_warn(y, kp, "unknown key %s.%s (ignored)", prefix, k);
		if (r < 0)
			return r;
	}
	return 0;
}

const char *nv_scalar(const json_t *v, char *buf, size_t size)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		return json_string_value(v);
	case JSON_INTEGER:
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return buf;
	case JSON_REAL:
		snprintf(buf, size, "%.17g", json_real_value(v));
		return buf;
	case JSON_TRUE:
	case JSON_FALSE:
		return json_is_true(v) ? "true" : "false";
	case JSON_NULL:
		return "";
	default:
		return NULL;
	}
}

/* A top-level section; null ("sharing:" alone) is none, as upstream's JSON decoding leaves the struct zero. */
static struct yval section(const struct walk *y, const json_t *root, const char *key)
{
	struct yval r = nv_member(y, root, key);
	return json_is_null(r.v) ? (struct yval){0} : r;
}

/* A scalar, or a sequence of scalars joined with ',' (for list-valued options). */
static int value_text(struct walk *y, struct yval n, const char *key, bool list_ok, char *buf, size_t size)
{
	char num[64];
	const char *s = nv_scalar(n.v, num, sizeof(num));
	size_t off = 0, i;
	json_t *e;

	if (s) {
		if (strlen(s) >= size)
			return nv_err(y, n.pos, key, "value longer than %zu characters", size - 1);
		snprintf(buf, size, "%s", s);
		return 0;
	}
	if (!json_is_array(n.v) || !list_ok)
		return nv_err(y, n.pos, key, "expected a single value, found a %s",
			      json_is_object(n.v) ? "mapping" : "list");
	buf[0] = '\0';
	json_array_foreach (n.v, i, e) {
		struct yaml_pos ip = n.pos;

		yaml_where_item(y->w, n.v, i, &ip);
		if (!(s = nv_scalar(e, num, sizeof(num))) || json_is_null(e))
			return nv_err(y, ip, key, "list items must be plain values");
		off += (size_t)snprintf(buf + off, off < size ? size - off : 0, "%s%s", off ? "," : "", s);
		if (off >= size)
			return nv_err(y, n.pos, key, "list longer than %zu characters", size - 1);
	}
	return 0;
}

/* What a value is, in the words of YAML. */
static const char *json_type_word(const json_t *v)
{
	static const char *const words[] = {
	    [JSON_OBJECT] = "a mapping", [JSON_ARRAY] = "a list",  [JSON_STRING] = "a string",
	    [JSON_INTEGER] = "a number", [JSON_REAL] = "a number", [JSON_TRUE] = "a boolean",
	    [JSON_FALSE] = "a boolean",  [JSON_NULL] = "null",
	};

	return words[json_typeof(v)];
}

/* A key of upstream's file: another reader's, when this one has no row for it. */
static bool is_v1_key(const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(nvconfig_keys); i++)
		if (streq(nvconfig_keys[i], key))
			return true;
	return false;
}

static int walk_options(struct walk *y, struct yval map, const char *prefix);

/*
 * A number for a duration: nanoseconds, as upstream's Duration.UnmarshalJSON takes a JSON number
 * (time.Duration(float64), truncated; docs/reference/go-parsing.md); written "<N>ns" for the setter.
 */
static int duration_number(struct walk *y, const char *key, struct yval v, char *buf, size_t size)
{
	double d = json_number_value(v.v);

	if (!(d > -9.2e18 && d < 9.2e18))
		return nv_err(y, v.pos, key,
			      "a bare number is nanoseconds here, as upstream, and this one is out of range");
	if (json_is_integer(v.v))
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT "ns", json_integer_value(v.v));
	else
		snprintf(buf, size, "%lldns", (long long)d);
	return 0;
}

/*
 * The YAML/JSON type a row's kind takes, as upstream's encoding/json decodes the file into typed
 * fields (api/config/v1/flags.go, duration.go at v0.20.0; docs/reference/device-plugin.md §2): a
 * *bool takes only a boolean ("false" and 1 are refused), a *string only a string (5 is refused), a
 * Duration a number or a string, deviceListStrategy a string or a list of strings.
 */
static const char *type_wrong(const struct optspec *o, const json_t *v)
{
	size_t i;
	json_t *e;

	if ((json_is_array(v) && o->kind != OPT_FLAGS) || json_is_object(v))
		return NULL; /* value_text() says a single value is expected */
	switch (o->kind) {
	case OPT_SET:
	case OPT_BOOL:
		return json_is_boolean(v) ? NULL : "must be true or false, unquoted";
	case OPT_STR:
	case OPT_PATH:
	case OPT_FILE:
	case OPT_ENUM:
		return json_is_string(v) ? NULL : "must be a string (quote it)";
	case OPT_DURATION:
		return json_is_string(v) || json_is_number(v) ? NULL : "must be a duration: a string (60s) or a number";
	case OPT_FLAGS:
		if (json_is_string(v))
			return NULL;
		json_array_foreach (v, i, e)
			if (!json_is_string(e))
				return "list items must be strings";
		return json_is_array(v) ? NULL : "must be a string or a list of strings";
	default:
		return NULL; /* UINT, CALL: their setter checks the text */
	}
}

/* One flags.* or imex.* value: to the reader's row of that key through the engine's setter. */
static int apply_option(struct walk *y, const char *key, struct yval v)
{
	const struct optspec *o = optspec_by_key(y->cli->rows, key);
	bool bare = o && o->kind == OPT_DURATION && json_is_number(v.v);
	_cleanup_free_ char *where = NULL;
	char text[PATH_MAX];
	int r;

	if (!o) {
		if (streq(key, "flags.plugin") || streq(key, "flags.gfd"))
			return walk_options(y, v, key); /* fails on anything but a mapping */
		/* a key of upstream's schema that another reader of the file uses (the plugin's, GFD's) is no typo */
		return is_v1_key(key) ? 0 : nv_warn(y, v.pos, "unknown key %s (ignored)", key);
	}
	if (json_is_null(v.v))
		return 0; /* `key:` with no value = null: keep the default */
	if (type_wrong(o, v.v))
		return nv_err(y, v.pos, key, "%s, got %s", type_wrong(o, v.v), json_type_word(v.v));
	/* a list is joined with ',' for the list-valued rows: FLAGS, and imex.channelIDs (its CALL) */
	r = bare ? duration_number(y, key, v, text, sizeof(text))
		 : value_text(y, v, key, o->kind == OPT_FLAGS || o->kind == OPT_CALL, text, sizeof(text));
	if (r < 0)
		return -EINVAL;
	if (asprintf(&where, "%s:%u:%u", y->name, v.pos.line, v.pos.col) < 0)
		return gerr_set(y->err, ENOMEM, "out of memory");
	r = optspec_set_key(y->cli, y->opts, key, text, where, y->err);
	if (r < 0 && bare && y->err)
		gerr_suffix(y->err, "; a bare number is nanoseconds here, as upstream; write 60s");
	return r;
}

static int walk_options(struct walk *y, struct yval map, const char *prefix)
{
	const char *k;
	json_t *v;

	if (json_is_null(map.v)) /* "plugin:" alone: upstream's nil pointer, no flags */
		return 0;
	if (!json_is_object(map.v))
		return nv_err(y, map.pos, prefix, "expected a mapping");
	json_object_foreach (map.v, k, v) {
		_cleanup_free_ char *key = NULL; /* a key of the file, as long as it is */
		int r;

		if (asprintf(&key, "%s.%s", prefix, k) < 0)
			return gerr_set(y->err, ENOMEM, "out of memory");
		r = apply_option(y, key, nv_member(y, map.v, k));
		if (r < 0)
			return r;
	}
	return 0;
}

static int walk_document(struct walk *y, struct yval root)
{
	static const char *const top_known[] = {"version", "flags", "resources", "sharing", "imex", NULL};
	struct yval v;
	char num[64];
	int r;

	if (json_is_null(root.v))
		return 0; /* empty file */
	if (!json_is_object(root.v))
		return nv_err(y, root.pos, "(top)", "expected a mapping with version: v1");
	if ((r = nv_warn_unknown(y, root, "(top)", top_known)) < 0)
		return r;
	v = nv_member(y, root.v, "version");
	if (v.v && (!json_is_string(v.v) || !streq(json_string_value(v.v), "v1"))) {
		const char *s = nv_scalar(v.v, num, sizeof(num));

		return nv_err(y, v.pos, "version", "unknown version \"%s\"; only v1 is supported", s ? s : "");
	}
	if ((v = section(y, root.v, "flags")).v && (r = walk_options(y, v, "flags")) < 0)
		return r;
	if ((v = section(y, root.v, "imex")).v && (r = walk_options(y, v, "imex")) < 0)
		return r;
	if ((v = section(y, root.v, "resources")).v && (r = nv_resources(y, v)) < 0)
		return r;
	if ((v = section(y, root.v, "sharing")).v && (r = nv_sharing(y, v)) < 0)
		return r;
	return 0;
}

void nvconfig_file_clear(struct nvconfig_file *f)
{
	warnings_clear(&f->warnings);
	*f = (struct nvconfig_file){0};
}

int nvconfig_read(const char *text, size_t len, const char *name, const struct optspec_cli *cli, void *opts,
		  struct nvconfig_file *ret, struct gerr *err)
{
	_cleanup_(yaml_where_freep) struct yaml_where *w = NULL;
	struct walk y = {name, NULL, cli, opts, ret, err};
	struct yval root = {NULL, {1, 1}};
	int r;

	nvconfig_file_clear(ret);
	r = yaml_to_json(text, len, name, 0, &root.v, &w, err);
	if (r < 0)
		return r;
	y.w = w;
	yaml_where_root(w, &root.pos);
	r = walk_document(&y, root);
	json_decref(root.v);
	if (r < 0)
		nvconfig_file_clear(ret);
	return r;
}

int nvconfig_load(const char *path, const struct optspec_cli *cli, void *opts, struct nvconfig_file *ret,
		  struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	r = read_file(path, NVCONFIG_FILE_MAX, &text, &len, err);
	if (r < 0)
		return gerr_prefix(err, "reading the config file %s: ", path), r;
	return nvconfig_read(text, len, path, cli, opts, ret, err);
}
