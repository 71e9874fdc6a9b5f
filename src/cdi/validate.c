/* SPDX-License-Identifier: Apache-2.0 */
/* CDI spec validation: one table of problem codes, one table of fields per object, checks per field. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cdi/internal.h"
#include "util/fileio.h"

/* Problem codes: stable names, the doctor category, severity and the default fix. */
static const struct code_info {
	const char *code;
	const char *category;
	bool error;
	const char *fix;
} codes[] = {
    {"parse-error", "spec-invalid", true, "fix the syntax at the position given; a runtime skips the whole file"},
    {"missing-file", "spec-missing", true,
     "check the path: runtimes read specs from cdi_spec_dirs (/etc/cdi, /var/run/cdi)"},
    {"unreadable", "spec-unreadable", true,
     "make the file readable by the runtime user (chmod 0644 FILE, and a+x on its directories)"},
    {"dir-unreadable", "spec-unreadable", true,
     "make the dir listable by the runtime user (chmod 0755 DIR), or fix cdi_spec_dirs"},
    {"unknown-field", "spec-invalid", true,
     "remove the field or fix its spelling; CDI parsing is strict and rejects the whole file"},
    {"missing-field", "spec-invalid", true, "add the field; the runtime rejects the file without it"},
    {"wrong-type", "spec-invalid", true, "use the JSON type the CDI spec defines for this field"},
    {"invalid-version", "spec-invalid", true, "use a cdiVersion CDI defines (0.3.0 ... 1.1.0)"},
    {"version-too-new", "version-too-new", true,
     "regenerate with the lowest cdiVersion covering the fields used (gpulet cdi generate does), or "
     "upgrade the runtime"},
    {"version-too-low", "spec-invalid", true,
     "raise cdiVersion to the version named, or drop the field: CDI libraries from 0.5.4 on refuse the file "
     "(0.5.0-0.5.3, as in podman 4.3, still load it)"},
    {"version-v-prefix", "warning", false,
     "write the version without the 'v' (e.g. 0.5.0): CDI libraries before 0.5.4 (podman 4.3, containerd "
     "1.7.0-1.7.12) ignore the file"},
    {"key-case", "warning", false,
     "spell the key as the CDI spec does: the CDI Go library ignores case in keys, other consumers may not"},
    {"no-libraries", "warning", false,
     "regenerate the spec with the driver root the libraries are under (gpulet cdi generate --driver-root): "
     "without libcuda the container finds no CUDA driver unless the image ships one of the exact driver "
     "version"},
    {"invalid-kind", "spec-invalid", true,
     "kind is vendor/class: start with a letter, end with a letter or digit, middle letters, digits, '_', "
     "'.', '-'"},
    {"class-too-short", "spec-invalid", true,
     "use a class of 2 or more characters (e.g. gpu); a 1-character class crashes the CDI Go library 0.5.2 (podman "
     "4.3) while it scans the dir"},
    {"invalid-device-name", "spec-invalid", true,
     "device names start and end with a letter or digit; middle letters, digits, '_', '.', ':', '-'"},
    {"duplicate-name", "spec-invalid", true, "give every device in a spec a distinct name"},
    {"no-devices", "spec-invalid", true, "a spec needs at least one device"},
    {"empty-edits", "spec-invalid", true, "give the device at least one env, deviceNode, mount or hook"},
    {"invalid-env", "spec-invalid", true, "env entries are NAME=value with a non-empty NAME"},
    {"invalid-hook", "spec-invalid", true,
     "hookName is one of prestart, createRuntime, createContainer, startContainer, poststart, poststop"},
    {"invalid-path", "spec-invalid", true, "use an absolute path"},
    {"invalid-value", "spec-invalid", true, "use a value the CDI spec allows for this field"},
    {"duplicate-device", "duplicate-device", true,
     "define the device in one file per dir: at one priority the runtime drops a device defined twice"},
    {"shadowed-device", "warning", false,
     "remove the older definition; the later dir (/var/run/cdi) wins and this one is never used"},
    {"host-path-missing", "stale-devices", true,
     "regenerate the spec (gpulet cdi generate) after a driver or GPU change, or remove the entry"},
    {"not-a-device-node", "stale-devices", true, "point hostPath at a character or block device"},
    {"not-scanned", "warning", false, "rename the file to .json or .yaml; runtimes read only those"},
    /* cdi_spec_conflicts(): what generate finds next to the file it is about to write */
    {"conflict-same-dir", "duplicate-device", true,
     "remove that file (or rerun with --force, which moves it aside): runtimes drop a device defined twice in "
     "one dir, and every container asking for it fails"},
    {"conflict-shadowed", "duplicate-device", true,
     "remove that file (or rerun with --force, which moves it aside): the runtime uses it instead of the spec "
     "written now"},
    {"conflict-shadows", "warning", false,
     "remove the older file when it is no longer needed; the spec written now wins over it"},
};

static const struct code_info *code_info(const char *code)
{
	for (size_t i = 0; i < ELEMENTSOF(codes); i++)
		if (streq(codes[i].code, code))
			return &codes[i];
	return &codes[0];
}

static char *safe_strdup(const char *s)
{
	return strdup(s ? s : "");
}

void cdi_problem(struct cdi_vctx *v, const char *code, const char *path, const char *fix, const char *fmt, ...)
{
	const struct code_info *ci = code_info(code);
	struct cdi_report *rep = v->rep;
	struct cdi_problem *p, *np;
	va_list ap;
	int r;

	np = realloc(rep->problems, (rep->n_problems + 1) * sizeof(*np));
	if (!np) {
		v->oom = 1;
		return;
	}
	rep->problems = np;
	p = &np[rep->n_problems];
	*p = (struct cdi_problem){.code = ci->code, .category = ci->category, .error = ci->error};
	va_start(ap, fmt);
	r = vasprintf(&p->message, fmt, ap);
	va_end(ap);
	p->file = safe_strdup(v->file);
	p->json_path = safe_strdup(path);
	p->fix = safe_strdup(fix ? fix : ci->fix);
	if (r < 0 || !p->file || !p->json_path || !p->fix) {
		if (r >= 0)
			free(p->message);
		free(p->file);
		free(p->json_path);
		free(p->fix);
		v->oom = 1;
		return;
	}
	rep->n_problems++;
	if (ci->error)
		rep->n_errors++;
}

enum ftype { F_STRING, F_INT, F_UINT32, F_BOOL, F_OBJECT, F_ARRAY, F_STRING_ARRAY, F_STRING_MAP, F_UINT32_ARRAY };

static const char *const ftype_names[] = {
    [F_STRING] = "a string",
    [F_INT] = "an integer",
    [F_UINT32] = "an integer 0..4294967295",
    [F_BOOL] = "true or false",
    [F_OBJECT] = "an object",
    [F_ARRAY] = "a list of objects",
    [F_STRING_ARRAY] = "a list of strings",
    [F_STRING_MAP] = "an object of string values",
    [F_UINT32_ARRAY] = "a list of integers 0..4294967295",
};

struct field;
typedef void (*check_fn)(struct cdi_vctx *v, const json_t *value, const char *path);

struct field {
	const char *key;
	enum ftype type;
	bool required;
	const struct field *sub; /* F_OBJECT: its fields; F_ARRAY: each element's fields */
	check_fn check;          /* on the value; for F_ARRAY on each element */
};

/* A host path as the runtime sees it, read under --root. */
static int stat_host(const struct cdi_vctx *v, const char *path, struct stat *st)
{
	_cleanup_free_ char *p = root_path(v->o->root, path);

	if (!p)
		return -ENOMEM;
	return stat(p, st) < 0 ? -errno : 0;
}

static void check_abs_path(struct cdi_vctx *v, const json_t *s, const char *path)
{
	if (json_string_value(s)[0] != '/')
		cdi_problem(v, "invalid-path", path, NULL, "'%s' is not an absolute path", json_string_value(s));
}

static void check_env(struct cdi_vctx *v, const json_t *a, const char *path)
{
	const json_t *e;
	size_t i;

	json_array_foreach (a, i, e) {
		const char *eq = strchr(json_string_value(e), '=');

		if (!eq || eq == json_string_value(e))
			cdi_problem(v, "invalid-env", path, NULL, "env entry %zu '%s' is not NAME=value", i,
				    json_string_value(e));
	}
}

static void check_node_type(struct cdi_vctx *v, const json_t *s, const char *path)
{
	const char *t = json_string_value(s);

	if (!streq(t, "") && !streq(t, "b") && !streq(t, "c") && !streq(t, "u") && !streq(t, "p"))
		cdi_problem(v, "invalid-value", path,
			    "use \"c\" (char), \"b\" (block), \"u\" or \"p\", or leave it out",
			    "device node type '%s' is not b, c, u or p", t);
}

/* The CLOS is a resctrl dir name: "/" (the root CLOS) or a file name (container-edits.go IntelRdt) */
static void check_closid(struct cdi_vctx *v, const json_t *s, const char *path)
{
	const char *c = json_string_value(s);

	if (!streq(c, "/") && (strlen(c) >= 4096 || streq(c, ".") || streq(c, "..") || strpbrk(c, "/\n")))
		cdi_problem(v, "invalid-value", path,
			    "use a resctrl group name (no '/' or newline, not . or ..) or \"/\"",
			    "intelRdt closID '%s' is not a file name: CDI libraries that know intelRdt (0.7.0 and "
			    "later) refuse the spec",
			    c);
}

static void check_permissions(struct cdi_vctx *v, const json_t *s, const char *path)
{
	const char *p = json_string_value(s);

	/* "none" (empty cgroup permissions) is in the CDI library's main branch only, after 1.1.0 */
	if (strspn(p, "rwm") != strlen(p))
		cdi_problem(v, "invalid-value", path, "use a combination of r, w and m, or leave it out",
			    "permissions '%s' is not a subset of rwm%s", p,
			    streq(p, "none") ? " ('none' is unknown to every released CDI library)" : "");
}

static void check_hook_name(struct cdi_vctx *v, const json_t *s, const char *path)
{
	/* pkg/cdi/container-edits.go validHookNames */
	static const char *const names[] = {"prestart",       "createRuntime", "createContainer",
					    "startContainer", "poststart",     "poststop"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (streq(json_string_value(s), names[i]))
			return;
	cdi_problem(v, "invalid-hook", path, NULL, "unknown hookName '%s'", json_string_value(s));
}

static void check_timeout(struct cdi_vctx *v, const json_t *i, const char *path)
{
	if (json_integer_value(i) <= 0)
		cdi_problem(v, "invalid-value", path, "give a timeout in seconds greater than 0, or leave it out",
			    "hook timeout %" JSON_INTEGER_FORMAT " is not positive", json_integer_value(i));
}

static void check_device_name(struct cdi_vctx *v, const json_t *s, const char *path)
{
	if (!cdi_device_name_valid(json_string_value(s)))
		cdi_problem(v, "invalid-device-name", path, NULL, "device name '%s' is not a valid CDI device name",
			    json_string_value(s));
}

static void check_host_exists(struct cdi_vctx *v, const char *host, const char *path, bool want_device)
{
	struct stat st;
	int r;

	if (v->o->no_host_paths)
		return;
	r = stat_host(v, host, &st);
	if (r == -ENOENT || r == -ENOTDIR)
		cdi_problem(v, "host-path-missing", path, NULL, "host path %s does not exist", host);
	else if (r == 0 && want_device && !S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
		cdi_problem(v, "not-a-device-node", path, NULL,
			    "%s is not a device node; the runtime refuses to inject it", host);
}

static void check_device_node(struct cdi_vctx *v, const json_t *n, const char *path)
{
	const char *host = json_string_value(json_object_get(n, "hostPath"));
	const char *type = json_string_value(json_object_get(n, "type"));
	char sub[512];

	if (!host || !*host)
		host = json_string_value(json_object_get(n, "path"));
	/* With type and major given the runtime does not stat the host (container-edits_unix.go). */
	if (!host || (type && *type && json_integer_value(json_object_get(n, "major")) != 0))
		return;
	snprintf(sub, sizeof(sub), "%s.%s", path, json_object_get(n, "hostPath") ? "hostPath" : "path");
	check_host_exists(v, host, sub, true);
}

static void check_mount(struct cdi_vctx *v, const json_t *m, const char *path)
{
	const char *host = json_string_value(json_object_get(m, "hostPath"));
	char sub[512];

	snprintf(sub, sizeof(sub), "%s.hostPath", path);
	if (host && host[0] == '/')
		check_host_exists(v, host, sub, false);
}

static void check_hook(struct cdi_vctx *v, const json_t *h, const char *path)
{
	const char *p = json_string_value(json_object_get(h, "path"));
	char sub[512];

	snprintf(sub, sizeof(sub), "%s.path", path);
	if (p && p[0] == '/')
		check_host_exists(v, p, sub, false);
}

static void check_edits_nonempty(struct cdi_vctx *v, const json_t *e, const char *path)
{
	static const char *const keys[] = {"env",      "deviceNodes",    "mounts",    "hooks",
					   "intelRdt", "additionalGids", "netDevices"};

	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		const json_t *x = json_object_get(e, keys[i]);

		if (x && !json_is_null(x) && (!json_is_array(x) || json_array_size(x) > 0))
			return;
	}
	cdi_problem(v, "empty-edits", path, NULL,
		    "the device's containerEdits are empty; the runtime rejects the spec");
}

static void check_kind(struct cdi_vctx *v, const json_t *s, const char *path)
{
	const char *kind = json_string_value(s), *slash = strchr(kind, '/');
	_cleanup_free_ char *vendor = slash ? strndup(kind, (size_t)(slash - kind)) : NULL;
	const char *class = slash ? slash + 1 : "";

	if (!slash || !vendor || !cdi_vendor_valid(vendor) || !cdi_name_chars(class, "_.-", true))
		cdi_problem(v, "invalid-kind", path, NULL, "kind '%s' is not vendor/class", kind);
	else if (strlen(class) < 2)
		cdi_problem(v, "class-too-short", path, NULL, "class '%s' of kind '%s' has 1 character", class, kind);
}

static void check_version(struct cdi_vctx *v, const json_t *s, const char *path)
{
	const char *ver = json_string_value(s);
	unsigned n[3];

	if (cdi_parse_version(ver, n) < 0 || !cdi_version_known(ver)) {
		cdi_problem(v, "invalid-version", path, NULL, "cdiVersion '%s' is not a version CDI defines", ver);
		return;
	}
	if (cdi_version_cmp(ver, CDI_EARLIEST_VERSION) < 0) {
		cdi_problem(v, "invalid-version", path, "use cdiVersion 0.3.0 or later",
			    "cdiVersion %s is older than any runtime loads (earliest " CDI_EARLIEST_VERSION ")", ver);
		return;
	}
	if (ver[0] == 'v') {
		if (cdi_runtime_refuses_v_prefix(v->o->runtime_name, v->o->runtime_version)) {
			cdi_problem(
			    v, "invalid-version", path,
			    "write the version without the 'v' (e.g. 0.5.0); CDI libraries before 0.5.4 look the "
			    "version up as written",
			    "cdiVersion '%s' has a 'v' prefix, which the runtime%s%s (a CDI library before 0.5.4) "
			    "does not know: it ignores the whole file and its devices are unresolvable",
			    ver, v->o->runtime_name ? " " : "", v->o->runtime_name ? v->o->runtime_name : "");
			return;
		}
		cdi_problem(v, "version-v-prefix", path, NULL,
			    "cdiVersion '%s' has a 'v' prefix: CDI libraries from 0.5.4 read it as %s, older ones "
			    "do not know it",
			    ver, ver + 1);
	}
	v->version = ver;
	if (v->o->runtime_version && cdi_version_cmp(ver, v->o->runtime_version) > 0)
		cdi_problem(
		    v, "version-too-new", path, NULL,
		    "cdiVersion %s is newer than the runtime%s%s understands (at most %s): it ignores the whole "
		    "file and its devices are unresolvable",
		    ver, v->o->runtime_name ? " " : "", v->o->runtime_name ? v->o->runtime_name : "",
		    v->o->runtime_version);
}

static const struct field node_fields[] = {
    {"path", F_STRING, true, NULL, check_abs_path},
    {"hostPath", F_STRING, false, NULL, check_abs_path},
    {"type", F_STRING, false, NULL, check_node_type},
    {"major", F_INT, false, NULL, NULL},
    {"minor", F_INT, false, NULL, NULL},
    {"fileMode", F_UINT32, false, NULL, NULL}, /* *os.FileMode, a uint32 */
    {"permissions", F_STRING, false, NULL, check_permissions},
    {"uid", F_UINT32, false, NULL, NULL},
    {"gid", F_UINT32, false, NULL, NULL},
    {0},
};
static const struct field mount_fields[] = {
    {"hostPath", F_STRING, true, NULL, NULL},
    {"containerPath", F_STRING, true, NULL, NULL},
    {"options", F_STRING_ARRAY, false, NULL, NULL},
    {"type", F_STRING, false, NULL, NULL},
    {0},
};
static const struct field hook_fields[] = {
    {"hookName", F_STRING, true, NULL, check_hook_name}, {"path", F_STRING, true, NULL, check_abs_path},
    {"args", F_STRING_ARRAY, false, NULL, NULL},         {"env", F_STRING_ARRAY, false, NULL, check_env},
    {"timeout", F_INT, false, NULL, check_timeout},      {0},
};
static const struct field rdt_fields[] = {
    {"closID", F_STRING, false, NULL, check_closid}, {"l3CacheSchema", F_STRING, false, NULL, NULL},
    {"memBwSchema", F_STRING, false, NULL, NULL},    {"schemata", F_STRING_ARRAY, false, NULL, NULL},
    {"enableMonitoring", F_BOOL, false, NULL, NULL}, {"enableCMT", F_BOOL, false, NULL, NULL},
    {"enableMBM", F_BOOL, false, NULL, NULL},        {0},
};
static const struct field net_fields[] = {
    {"hostInterfaceName", F_STRING, true, NULL, NULL},
    {"name", F_STRING, true, NULL, NULL},
    {0},
};
static const struct field edits_fields[] = {
    {"env", F_STRING_ARRAY, false, NULL, check_env},
    {"deviceNodes", F_ARRAY, false, node_fields, check_device_node},
    {"mounts", F_ARRAY, false, mount_fields, check_mount},
    {"hooks", F_ARRAY, false, hook_fields, check_hook},
    {"intelRdt", F_OBJECT, false, rdt_fields, NULL},
    {"additionalGids", F_UINT32_ARRAY, false, NULL, NULL},
    {"netDevices", F_ARRAY, false, net_fields, NULL},
    {0},
};
static const struct field device_fields[] = {
    {"name", F_STRING, true, NULL, check_device_name},
    {"annotations", F_STRING_MAP, false, NULL, NULL},
    {"containerEdits", F_OBJECT, true, edits_fields, check_edits_nonempty},
    {0},
};
static const struct field spec_fields[] = {
    {"cdiVersion", F_STRING, true, NULL, check_version},     {"kind", F_STRING, true, NULL, check_kind},
    {"annotations", F_STRING_MAP, false, NULL, NULL},        {"devices", F_ARRAY, true, device_fields, NULL},
    {"containerEdits", F_OBJECT, false, edits_fields, NULL}, {0},
};

static bool is_uint32(const json_t *j)
{
	return json_is_integer(j) && json_integer_value(j) >= 0 && json_integer_value(j) <= 4294967295LL;
}

static bool array_all(const json_t *a, bool (*pred)(const json_t *))
{
	const json_t *e;
	size_t i;

	json_array_foreach (a, i, e)
		if (!pred(e))
			return false;
	return true;
}

static bool is_string(const json_t *j)
{
	return json_is_string(j);
}

static bool type_ok(enum ftype t, const json_t *j)
{
	const json_t *val;
	const char *key;

	switch (t) {
	case F_STRING:
		return json_is_string(j);
	case F_INT:
		return json_is_integer(j);
	case F_UINT32:
		return is_uint32(j);
	case F_BOOL:
		return json_is_boolean(j);
	case F_OBJECT:
		return json_is_object(j);
	case F_ARRAY:
		return json_is_array(j);
	case F_STRING_ARRAY:
		return json_is_array(j) && array_all(j, is_string);
	case F_UINT32_ARRAY:
		return json_is_array(j) && array_all(j, is_uint32);
	case F_STRING_MAP:
		if (!json_is_object(j))
			return false;
		json_object_foreach ((json_t *)j, key, val)
			if (!json_is_string(val))
				return false;
		return true;
	}
	return false;
}

static void walk(struct cdi_vctx *v, const json_t *obj, const struct field *fields, const char *path);

static void walk_field(struct cdi_vctx *v, const struct field *f, const json_t *val, const char *path)
{
	char sub[512];
	const json_t *e;
	size_t i;

	if (!type_ok(f->type, val)) {
		cdi_problem(v, "wrong-type", path, NULL, "%s must be %s", f->key, ftype_names[f->type]);
		return;
	}
	if (f->type == F_OBJECT) {
		walk(v, val, f->sub, path);
		if (f->check)
			f->check(v, val, path);
		return;
	}
	if (f->type != F_ARRAY) {
		if (f->check)
			f->check(v, val, path);
		return;
	}
	json_array_foreach (val, i, e) {
		snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
		if (!json_is_object(e)) {
			cdi_problem(v, "wrong-type", sub, NULL, "each entry of %s must be an object", f->key);
			continue;
		}
		walk(v, e, f->sub, sub);
		if (f->check)
			f->check(v, e, sub);
	}
}

static void walk(struct cdi_vctx *v, const json_t *obj, const struct field *fields, const char *path)
{
	char sub[512];
	const char *key;
	json_t *val;

	json_object_foreach ((json_t *)obj, key, val) {
		const struct field *f = fields;

		while (f->key && !streq(f->key, key))
			f++;
		if (!f->key) {
			snprintf(sub, sizeof(sub), "%s.%s", path, key);
			cdi_problem(v, "unknown-field", sub, NULL, "unknown field '%s'", key);
		}
	}
	for (const struct field *f = fields; f->key; f++) {
		const json_t *x = json_object_get(obj, f->key);

		snprintf(sub, sizeof(sub), "%s.%s", path, f->key);
		if (!x || json_is_null(x)) {
			if (f->required)
				cdi_problem(v, "missing-field", sub, NULL, "required field '%s' is missing", f->key);
			continue;
		}
		walk_field(v, f, x, sub);
	}
}

/* A spec that puts NVIDIA device nodes into a container should bring the driver libraries too. */
static bool edits_have(const json_t *edits, const char *array, const char *key, const char *needle)
{
	const json_t *it;
	size_t i;

	json_array_foreach (json_object_get(edits, array), i, it) {
		const char *s = json_string_value(json_object_get(it, key));

		if (s && strstr(s, needle))
			return true;
	}
	return false;
}

static void check_libraries(struct cdi_vctx *v, const json_t *spec)
{
	const json_t *edits = json_object_get(spec, "containerEdits"), *d;
	bool nvidia = edits_have(edits, "deviceNodes", "path", "/dev/nvidia");
	bool libs = edits_have(edits, "mounts", "containerPath", ".so");
	size_t i;

	json_array_foreach (json_object_get(spec, "devices"), i, d) {
		const json_t *de = json_object_get(d, "containerEdits");

		nvidia = nvidia || edits_have(de, "deviceNodes", "path", "/dev/nvidia");
		libs = libs || edits_have(de, "mounts", "containerPath", ".so");
	}
	if (nvidia && !libs)
		cdi_problem(v, "no-libraries", "$", NULL,
			    "the spec injects NVIDIA device nodes but mounts no library (no libcuda, no "
			    "libnvidia-ml)");
}

/* Checks across the whole spec: at least one device, unique names, the minimum version. */
static void check_spec(struct cdi_vctx *v, const json_t *spec)
{
	const json_t *devs = json_object_get(spec, "devices"), *d;
	const struct cdi_version_rule *rule;
	size_t i;

	if (json_is_array(devs) && json_array_size(devs) == 0)
		cdi_problem(v, "no-devices", "$.devices", NULL, "the spec defines no devices");
	json_array_foreach (devs, i, d) {
		const char *name = json_string_value(json_object_get(d, "name"));
		const json_t *other;
		size_t j;
		char path[64];

		json_array_foreach (devs, j, other)
			if (j < i && name && json_is_string(json_object_get(other, "name")) &&
			    streq(name, json_string_value(json_object_get(other, "name")))) {
				snprintf(path, sizeof(path), "$.devices[%zu].name", i);
				cdi_problem(v, "duplicate-name", path, NULL,
					    "device '%s' is defined again (first at $.devices[%zu])", name, j);
				break;
			}
	}
	check_libraries(v, spec);
	rule = cdi_min_version_rule(spec);
	if (v->version && rule && cdi_version_cmp(v->version, rule->version) < 0)
		cdi_problem(v, "version-too-low", "$.cdiVersion", NULL,
			    "cdiVersion %s is too old for the fields used: %s needs %s", v->version, rule->what,
			    rule->version);
}

static const struct field *field_named(const struct field *fields, const char *key, bool exact)
{
	for (const struct field *f = fields; f && f->key; f++)
		if (exact ? streq(f->key, key) : strcasecmp(f->key, key) == 0)
			return f;
	return NULL;
}

/*
 * The CDI library decodes with Go's encoding/json (through sigs.k8s.io/yaml), which matches a
 * key to a field whatever its case: "devicenodes" is deviceNodes, and of two keys naming one
 * field the later wins (docs/reference/cdi.md §2). Rename such keys to the spec's spelling, per
 * the field tables and recursively, so every check reads one spelling; each is a warning.
 */
static int canonical_object(struct cdi_vctx *v, json_t *obj, const struct field *fields, const char *path)
{
	json_auto_t *out = json_object();
	const char *key;
	json_t *val;
	char sub[512];

	if (!out)
		return -ENOMEM;
	json_object_foreach (obj, key, val) {
		const struct field *f = field_named(fields, key, true) ?: field_named(fields, key, false);
		const char *name = f ? f->key : key;

		if (f && !streq(key, f->key) && v) {
			snprintf(sub, sizeof(sub), "%s.%s", path, key);
			cdi_problem(v, "key-case", sub, NULL, "key '%s' is read as '%s'%s", key, f->key,
				    json_object_get(out, f->key) ? ", replacing the earlier one (the later key wins)"
								 : "");
		}
		if (json_object_set(out, name, val) < 0)
			return -ENOMEM;
	}
	if (json_object_clear(obj) < 0 || json_object_update(obj, out) < 0)
		return -ENOMEM;
	for (const struct field *f = fields; f && f->key; f++) {
		json_t *x = json_object_get(obj, f->key), *e;
		size_t i;
		int r = 0;

		snprintf(sub, sizeof(sub), "%s.%s", path, f->key);
		if (f->type == F_OBJECT && json_is_object(x))
			r = canonical_object(v, x, f->sub, sub);
		json_array_foreach (f->type == F_ARRAY ? x : NULL, i, e) {
			char elem[540];

			snprintf(elem, sizeof(elem), "%s[%zu]", sub, i);
			if (r >= 0 && json_is_object(e))
				r = canonical_object(v, e, f->sub, elem);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int cdi_canonical_keys(struct cdi_vctx *v, json_t *spec)
{
	return canonical_object(v, spec, spec_fields, "$");
}

int cdi_validate_spec(const char *file, const json_t *spec, const struct cdi_validate_options *o,
		      struct cdi_report *rep)
{
	struct cdi_vctx v = {.o = o, .rep = rep, .file = file};
	json_auto_t *copy = json_deep_copy(spec);

	if (!copy || cdi_canonical_keys(&v, copy) < 0)
		return -ENOMEM;
	walk(&v, copy, spec_fields, "$");
	check_spec(&v, copy);
	return v.oom ? -ENOMEM : 0;
}
