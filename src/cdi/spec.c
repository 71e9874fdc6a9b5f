/* SPDX-License-Identifier: Apache-2.0 */
/* CDI spec files: format (JSON, YAML), parse, read, and write atomically without replacing foreign files. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "cdi/internal.h"
#include "parse/json.h"
#include "parse/yaml.h"
#include "util/fileio.h"

/* ---- YAML output -------------------------------------------------------------------------------- */

/* A plain scalar a YAML 1.1 reader (go-yaml v2, PyYAML) would not read back as this string. */
static bool needs_quotes(const char *s)
{
	static const char *const words[] = {"y",   "yes",  "n", "no",   "true", "false", "on",
					    "off", "null", "~", ".inf", ".nan", "-.inf", "+.inf"};
	size_t n = strlen(s);

	if (n == 0 || isdigit((unsigned char)s[0]) || s[0] == '.' || s[0] == '+' ||
	    (s[0] == '-' && (n == 1 || isdigit((unsigned char)s[1]) || s[1] == '.')))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(words); i++)
		if (strcasecmp(s, words[i]) == 0)
			return true;
	return false;
}

static int emit(yaml_emitter_t *e, yaml_event_t *ev)
{
	return yaml_emitter_emit(e, ev) ? 0 : -EIO;
}

static int emit_scalar(yaml_emitter_t *e, const char *s, bool quote)
{
	yaml_event_t ev;

	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
					  quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE))
		return -ENOMEM;
	return emit(e, &ev);
}

static int emit_json(yaml_emitter_t *e, const json_t *j)
{
	yaml_event_t ev;
	const char *key;
	json_t *v;
	size_t i;
	char buf[64];
	int r = 0;

	switch (json_typeof(j)) {
	case JSON_OBJECT:
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) ||
		    emit(e, &ev) < 0)
			return -EIO;
		json_object_foreach ((json_t *)j, key, v) {
			if ((r = emit_scalar(e, key, needs_quotes(key))) < 0 || (r = emit_json(e, v)) < 0)
				return r;
		}
		return yaml_mapping_end_event_initialize(&ev) ? emit(e, &ev) : -ENOMEM;
	case JSON_ARRAY:
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE) ||
		    emit(e, &ev) < 0)
			return -EIO;
		json_array_foreach (j, i, v)
			if ((r = emit_json(e, v)) < 0)
				return r;
		return yaml_sequence_end_event_initialize(&ev) ? emit(e, &ev) : -ENOMEM;
	case JSON_STRING:
		return emit_scalar(e, json_string_value(j), needs_quotes(json_string_value(j)));
	case JSON_INTEGER:
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		return emit_scalar(e, buf, false);
	case JSON_REAL:
		snprintf(buf, sizeof(buf), "%.17g", json_real_value(j));
		return emit_scalar(e, buf, false);
	case JSON_TRUE:
		return emit_scalar(e, "true", false);
	case JSON_FALSE:
		return emit_scalar(e, "false", false);
	default:
		return emit_scalar(e, "null", false);
	}
}

static int format_yaml(const json_t *spec, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	yaml_emitter_t e;
	yaml_event_t ev;
	FILE *f = open_memstream(&buf, &len);
	int r = -ENOMEM;

	if (!f)
		return -ENOMEM;
	if (!yaml_emitter_initialize(&e)) {
		fclose(f);
		return -ENOMEM;
	}
	yaml_emitter_set_output_file(&e, f);
	yaml_emitter_set_unicode(&e, 1);
	yaml_emitter_set_width(&e, -1);
	if (yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) && emit(&e, &ev) == 0 &&
	    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0) && emit(&e, &ev) == 0 &&
	    emit_json(&e, spec) == 0 && yaml_document_end_event_initialize(&ev, 1) && emit(&e, &ev) == 0 &&
	    yaml_stream_end_event_initialize(&ev) && emit(&e, &ev) == 0)
		r = 0;
	yaml_emitter_delete(&e);
	if (fclose(f) != 0 || r < 0)
		return -EIO;
	*ret = TAKE_PTR(buf);
	return 0;
}

int cdi_format_spec(const json_t *spec, enum cdi_format fmt, char **ret, struct gerr *err)
{
	char *s;
	int r;

	if (fmt == CDI_FORMAT_YAML) {
		r = format_yaml(spec, ret);
		return r < 0 ? gerr_set(err, -r, "cannot format the spec as YAML") : 0;
	}
	s = json_dumps(spec, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!s)
		return gerr_set(err, ENOMEM, "out of memory");
	/* json_dumps output has no trailing newline; files and terminals want one. */
	r = asprintf(ret, "%s\n", s);
	free(s);
	return r < 0 ? gerr_set(err, ENOMEM, "out of memory") : 0;
}

/* ---- reading ------------------------------------------------------------------------------------ */

/* YAML through the one reader, strict about duplicate keys as the CDI library (yaml.UnmarshalStrict) */
static int parse_yaml(const char *name, const char *text, size_t len, json_t **ret, struct gerr *err)
{
	json_t *doc = NULL;
	int r;

	r = yaml_to_json(text, len, name, YAML_STRICT, &doc, NULL, err);
	if (r < 0)
		return r;
	if (!json_is_object(doc)) {
		json_decref(doc);
		return gerr_set(err, EINVAL, "%s: a CDI spec is a mapping (object) at the top level", name);
	}
	*ret = doc;
	return 0;
}

int cdi_parse_spec(const char *name, const char *text, size_t len, json_t **ret, struct gerr *err)
{
	if (!cdi_has_ext(name, ".json"))
		return parse_yaml(name, text, len, ret, err);
	/* jansson for *.json: exact line:column and duplicate keys, like the strict Go decoder. */
	return json_parse_object(name, "a CDI spec", text, len, ret, err);
}

static int parse_spec_text(const char *path, char **text, size_t len, void *ret, struct gerr *err)
{
	return cdi_parse_spec(path, *text, len, ret, err);
}

int cdi_read_spec(const char *path, json_t **ret, struct gerr *err)
{
	return read_and_parse(path, CDI_SPEC_MAX, parse_spec_text, ret, err);
}

/* ---- writing ------------------------------------------------------------------------------------ */

/* The kind our marker names in spec ("" when it has none). Points into spec. */
static const char *marker_kind(const json_t *spec)
{
	const json_t *e;
	size_t i;

	json_array_foreach (json_object_get(json_object_get(spec, "containerEdits"), "env"), i, e) {
		const char *s = json_string_value(e);

		if (s && strncmp(s, CDI_MARKER_ENV "=", strlen(CDI_MARKER_ENV) + 1) == 0)
			return s + strlen(CDI_MARKER_ENV) + 1;
	}
	return "";
}

/*
 * Open and read name under dfd without following a symlink or blocking on a FIFO; only a regular file is
 * read (bounded by CDI_SPEC_MAX). 0 when it does not exist, 1 with *text, *len and *st (the fd's) filled.
 * shown names it in messages.
 */
static int read_spec_at(int dfd, const char *name, const char *shown, char **text, size_t *len, struct stat *st,
			struct gerr *err)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int r;

	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 && errno == ELOOP)
		return gerr_set(err, EEXIST, "%s exists and is a symlink; not replacing it", shown);
	if (fd < 0)
		return gerr_set(err, errno, "cannot open %s: %s", shown, strerror(errno));
	if (fstat(fd, st) < 0)
		return gerr_set(err, errno, "cannot stat %s: %s", shown, strerror(errno));
	if (!S_ISREG(st->st_mode))
		return gerr_set(err, EEXIST, "%s exists and is not a regular file; not replacing it", shown);
	r = read_fd(fd, shown, CDI_SPEC_MAX, text, len, err);
	return r < 0 ? r : 1;
}

/* 0 when text (the file shown) carries our marker for kind; -EEXIST saying whose it is otherwise. */
static int spec_text_ours(const char *shown, const char *text, size_t len, const char *kind, struct gerr *err)
{
	json_auto_t *existing = NULL;
	struct gerr perr = {0};
	const char *mk;

	if (cdi_parse_spec(shown, text, len, &existing, &perr) < 0)
		return gerr_set(err, EEXIST,
				"%s exists and does not parse as a CDI spec (%s); not replacing it. Move it away, or "
				"choose another file name",
				shown, perr.msg);
	mk = marker_kind(existing);
	if (kind && streq(mk, kind))
		return 0;
	if (mk[0])
		return gerr_set(err, EEXIST,
				"%s was written by gpulet for kind %s, not %s; not replacing it. Choose another file "
				"name (the default is VENDOR-CLASS.EXT), or move it away",
				shown, mk, kind ? kind : "?");
	return gerr_set(err, EEXIST,
			"%s exists and was not written by gpulet (no %s entry; kind %s); not replacing it. Move it "
			"away, or choose another file name",
			shown, CDI_MARKER_ENV, json_string_value(json_object_get(existing, "kind")) ?: "?");
}

int cdi_spec_replaceable_at(int dfd, const char *name, const char *shown, const char *kind, struct stat *ret_st,
			    struct gerr *err)
{
	_cleanup_free_ char *old = NULL;
	struct stat st;
	size_t old_len;
	int r;

	r = read_spec_at(dfd, name, shown, &old, &old_len, &st, err);
	if (r <= 0)
		return r;
	r = spec_text_ours(shown, old, old_len, kind, err);
	if (r < 0)
		return r;
	if (ret_st)
		*ret_st = st;
	return 1;
}

int cdi_spec_replaceable(const char *path, const char *kind, struct gerr *err)
{
	int r = cdi_spec_replaceable_at(AT_FDCWD, path, path, kind, NULL, err);

	return r < 0 ? r : 0;
}

int cdi_move_aside(const char *path, char **ret, struct gerr *err)
{
	_cleanup_free_ char *to = NULL;

	if (asprintf(&to, "%s" CDI_REPLACED_SUFFIX, path) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	if (rename(path, to) < 0)
		return gerr_set(err, errno, "cannot move %s aside to %s: %s", path, to, strerror(errno));
	*ret = TAKE_PTR(to);
	return 0;
}

/* mkdir -p of dir (0755); refuses when dir itself is a symlink or not a directory. */
static int ensure_spec_dir(const char *dir, struct gerr *err)
{
	_cleanup_free_ char *copy = strdup(dir);
	struct stat st;

	if (!copy)
		return gerr_set(err, ENOMEM, "out of memory");
	if (lstat(dir, &st) == 0) {
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX] = "?";
			ssize_t n = readlink(dir, target, sizeof(target) - 1);

			if (n >= 0)
				target[n] = 0;
			return gerr_set(err, ELOOP,
					"CDI spec dir %s is a symlink to %s; refusing to write through it (a runtime "
					"may read a different dir). Replace it with a real directory",
					dir, target);
		}
		if (!S_ISDIR(st.st_mode))
			return gerr_set(err, ENOTDIR, "CDI spec dir %s exists but is not a directory", dir);
		return 0;
	}
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			return gerr_set(err, errno, "cannot create %s: %s", copy, strerror(errno));
		*p = '/';
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return gerr_set(err, errno, "cannot create CDI spec dir %s: %s", dir, strerror(errno));
	return 0;
}

int cdi_spec_file_name_ok(const char *file_name, struct gerr *err)
{
	if (strchr(file_name, '/') || (!cdi_has_ext(file_name, ".yaml") && !cdi_has_ext(file_name, ".json")))
		return gerr_set(err, EINVAL,
				"CDI spec file name '%s' must be a plain name ending in .json or .yaml (runtimes read "
				"only those)",
				file_name);
	return 0;
}

/* The spec dir as an fd, its last component not followed; a negative errno with err set otherwise. */
static int open_spec_dir(const char *dir, struct gerr *err)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dfd < 0)
		return gerr_set(err, errno, "cannot open CDI spec dir %s: %s (a symlink is not followed)", dir,
				strerror(errno));
	return dfd;
}

int cdi_write_spec(const char *dir, const char *file_name, json_t *spec, struct gerr *err)
{
	_cleanup_free_ char *path = NULL, *data = NULL, *old = NULL;
	const char *kind = json_string_value(json_object_get(spec, "kind"));
	bool yaml = cdi_has_ext(file_name, ".yaml");
	_cleanup_close_ int dfd = -1;
	size_t old_len;
	struct stat st;
	int r;

	r = cdi_spec_file_name_ok(file_name, err);
	if (r < 0)
		return r;
	r = ensure_spec_dir(dir, err);
	if (r < 0)
		return r;
	if (asprintf(&path, "%s/%s", dir, file_name) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	r = cdi_format_spec(spec, yaml ? CDI_FORMAT_YAML : CDI_FORMAT_JSON, &data, err);
	if (r < 0)
		return r;
	/* the last component of dir is not followed (ensure_spec_dir() refused a symlink there) */
	dfd = open_spec_dir(dir, err);
	if (dfd < 0)
		return dfd;
	/* what is there is read through one fd: no symlink followed, no FIFO to block on */
	r = read_spec_at(dfd, file_name, path, &old, &old_len, &st, err);
	if (r < 0)
		return r;
	if (r > 0) {
		if ((st.st_mode & 07777) == 0644 && old_len == strlen(data) && memcmp(old, data, old_len) == 0)
			return 0; /* unchanged: no rename, no inotify event for the runtimes */
		r = spec_text_ours(path, old, old_len, kind, err);
		if (r < 0)
			return r;
	}
	return write_file_atomic(path, data, strlen(data), 0644, err);
}

int cdi_remove_spec(const char *dir, const char *file_name, const char *kind, struct gerr *err)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int dfd = -1;
	struct stat ours, now;
	int r;

	r = cdi_spec_file_name_ok(file_name, err);
	if (r < 0)
		return r;
	if (asprintf(&path, "%s/%s", dir, file_name) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	/*
	 * O_NOFOLLOW covers only the last component of dir: a symlink further up is followed (dir under
	 * --root is a string join; known, as everywhere --root is used). From here on everything is relative
	 * to this one dir fd, so the dir checked is the dir removed in.
	 */
	dfd = open_spec_dir(dir, err);
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	/* ours only: a regular file carrying our marker for this kind (not a symlink, a FIFO, another's) */
	r = cdi_spec_replaceable_at(dfd, file_name, path, kind, &ours, err);
	if (r <= 0)
		return r;
	/* the name must still be the file checked; one swapped in since is left alone */
	if (fstatat(dfd, file_name, &now, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : gerr_set(err, errno, "cannot stat %s: %s", path, strerror(errno));
	if (now.st_dev != ours.st_dev || now.st_ino != ours.st_ino)
		return gerr_set(err, EEXIST, "%s was replaced while being checked; not removing it", path);
	if (unlinkat(dfd, file_name, 0) < 0)
		return errno == ENOENT ? 0 : gerr_set(err, errno, "cannot remove %s: %s", path, strerror(errno));
	return 1;
}
