/* SPDX-License-Identifier: Apache-2.0 */
/* The OCI state on the hook's stdin and the rootfs it names (runtime-spec runtime.md, config.md). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdihook/cdihook.h"
#include "parse/json.h"
#include "util/fileio.h"

void oci_state_clear(struct oci_state *s)
{
	free(s->id);
	free(s->bundle);
	free(s->root);
	*s = (struct oci_state){0};
}

/*
 * An optional string member: *ret NULL when absent. A non-string, or a string with a NUL inside
 * (a path that C would cut short), is an error.
 */
static int opt_string(const char *name, const json_t *o, const char *key, char **ret, struct gerr *err)
{
	const json_t *v = json_object_get(o, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return gerr_set(err, EINVAL, "%s: \"%s\" must be a string without NUL characters", name, key);
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : gerr_set(err, ENOMEM, "out of memory");
}

/* "pid": the container's init process on the host, a positive integer; 0 when absent or null. */
static int opt_pid(const char *name, const json_t *o, pid_t *ret, struct gerr *err)
{
	const json_t *v = json_object_get(o, "pid");

	*ret = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT_MAX)
		return gerr_set(err, EINVAL, "%s: \"pid\" must be a process id (a non-negative integer)", name);
	*ret = (pid_t)json_integer_value(v);
	return 0;
}

int oci_state_parse(const char *name, const char *text, size_t len, struct oci_state *ret, struct gerr *err)
{
	struct oci_state s = {0};
	json_t *doc = NULL;
	int r = json_parse_object(name, "the OCI state", text, len, &doc, err);

	if (r < 0)
		return r;
	r = opt_string(name, doc, "id", &s.id, err);
	if (r >= 0)
		r = opt_string(name, doc, "bundle", &s.bundle, err);
	if (r >= 0)
		r = opt_string(name, doc, "root", &s.root, err);
	if (r >= 0)
		r = opt_pid(name, doc, &s.pid, err);
	json_decref(doc);
	if (r >= 0 && (!s.bundle || !*s.bundle) && (!s.root || !*s.root))
		r = gerr_set(err, EINVAL,
			     "%s: the OCI state has no \"bundle\"; run this as an OCI hook (the runtime writes the "
			     "state on stdin) or give --container-spec FILE",
			     name);
	if (r < 0) {
		oci_state_clear(&s);
		return r;
	}
	*ret = s;
	return 0;
}

int oci_config_root(const char *name, const char *text, size_t len, char **ret, struct gerr *err)
{
	json_t *doc = NULL, *root;
	char *path = NULL;
	int r = json_parse_object(name, "the bundle's config.json", text, len, &doc, err);

	if (r < 0)
		return r;
	root = json_object_get(doc, "root");
	if (!json_is_object(root))
		r = gerr_set(err, EINVAL, "%s: no \"root\" object; the container has no rootfs to act in", name);
	else
		r = opt_string(name, root, "path", &path, err);
	json_decref(doc);
	if (r >= 0 && (!path || !*path))
		r = gerr_set(err, EINVAL, "%s: \"root.path\" is missing or empty", name);
	if (r < 0) {
		free(path);
		return r;
	}
	*ret = path;
	return 0;
}

int oci_state_rootfs(const struct oci_state *s, char **ret, struct gerr *err)
{
	_cleanup_free_ char *config = NULL, *text = NULL, *path = NULL;
	char *out;
	size_t len;
	int r;

	if (s->root && *s->root) {
		path = strdup(s->root);
		if (!path)
			return gerr_set(err, ENOMEM, "out of memory");
	} else {
		if (s->bundle[0] != '/')
			return gerr_set(err, EINVAL, "the OCI state's bundle '%s' is not an absolute path", s->bundle);
		if (asprintf(&config, "%s/config.json", s->bundle) < 0)
			return gerr_set(err, ENOMEM, "out of memory");
		r = read_file(config, OCI_CONFIG_MAX, &text, &len, NULL);
		if (r < 0)
			return gerr_set(err, -r,
					"reading %s to find the rootfs: %s; the OCI state's \"bundle\" must be the "
					"container's bundle dir (the runtime passes it when it runs the hook)",
					config, strerror(-r));
		r = oci_config_root(config, text, len, &path, err);
		if (r < 0)
			return r;
	}
	if (path[0] == '/')
		out = TAKE_PTR(path);
	else if (asprintf(&out, "%s/%s", s->bundle ? s->bundle : "", path) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	if (out[strspn(out, "/")] == '\0') {
		free(out);
		return gerr_set(err, EINVAL,
				"the container's rootfs is the host's \"/\"; refusing to edit the host (check the "
				"bundle's config.json root.path)");
	}
	*ret = out;
	return 0;
}

int cdihook_open_rootfs(const char *rootfs, struct gerr *err)
{
	_cleanup_close_ int fd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st, host;

	if (fd < 0)
		return gerr_set(err, errno, "the container's rootfs %s: %s", rootfs, strerror(errno));
	if (fstat(fd, &st) < 0 || stat("/", &host) < 0)
		return gerr_set(err, errno, "the container's rootfs %s: stat: %s", rootfs, strerror(errno));
	if (st.st_dev == host.st_dev && st.st_ino == host.st_ino)
		return gerr_set(err, EINVAL,
				"the container's rootfs %s is the host's \"/\"; refusing to edit the host (check the "
				"bundle's config.json root.path)",
				rootfs);
	return TAKE_FD(fd);
}
