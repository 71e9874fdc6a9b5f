/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fix as a command a person can paste: each argument quoted for a POSIX shell where it needs it (a
 * file name from the node is outside input), paths given as the node sees them, and a second form for
 * where the doctor ran when it read the node's files under --root (the same command with the paths
 * below that root and gpulet pointed at it), so that neither form writes to the wrong machine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/fileio.h"

bool doctor_root_elsewhere(const struct doctor_ctx *c)
{
	const char *r = c->o ? doctor_root(c->o) : "/";

	return *r && !streq(r, "/");
}

const char *doctor_node_path(const struct doctor_ctx *c, const char *path)
{
	const char *root = c->o ? doctor_root(c->o) : "/";
	size_t l = strlen(root);

	while (l > 1 && root[l - 1] == '/')
		l--;
	if (path && doctor_root_elsewhere(c) && !strncmp(path, root, l) && path[l] == '/')
		return path + l;
	return path;
}

/* Characters that need no quoting in a shell word. */
static bool plain_word(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-", *s))
			return false;
	return true;
}

/* Append word (prefix + s) to *buf, quoted when needed: 'it'\''s'. */
static int put_word(FILE *out, const char *prefix, const char *s)
{
	size_t pl = prefix ? strlen(prefix) : 0;
	_cleanup_free_ char *w = NULL;

	if (asprintf(&w, "%.*s%s", (int)pl, prefix ? prefix : "", s) < 0)
		return -ENOMEM;
	if (plain_word(w))
		return fputs(w, out) < 0 ? -EIO : 0;
	fputc('\'', out);
	for (const char *p = w; *p; p++)
		if (*p == '\'')
			fputs("'\\''", out);
		else
			fputc(*p, out);
	fputc('\'', out);
	return 0;
}

/* The driver root a gpulet command needs: the doctor's --driver-root, or where it found the driver. */
static const char *driver_root(const struct doctor_ctx *c)
{
	if (doctor_driver_root(c->o))
		return doctor_driver_root(c->o);
	return c->driver_root_found[0] ? c->driver_root_found : NULL;
}

/* Render args: here = false for the node, true for the doctor's side of --root. */
static int render(const struct doctor_ctx *c, const struct doctor_fix_arg *args, bool here, char **ret)
{
	const char *root = here ? doctor_root(c->o) : NULL;
	char *buf = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&buf, &size);
	bool first = true;
	int r = 0;

	if (!out)
		return -ENOMEM;
	for (const struct doctor_fix_arg *a = args; a->kind != FIX_END && r >= 0; a++) {
		struct {
			const char *opt, *val;
		} opts[3] = {{"--root", root},
			     {"--nvml-library", here ? doctor_nvml_library(c->o) : NULL},
			     {"--driver-root", driver_root(c)}};

		if (a->kind == FIX_ROOT) {
			for (size_t k = 0; k < ELEMENTSOF(opts) && r >= 0; k++) {
				if (!opts[k].val)
					continue;
				fprintf(out, "%s%s ", first ? "" : " ", opts[k].opt);
				first = false;
				r = put_word(out, NULL, opts[k].val);
			}
			continue;
		}
		fputs(first ? "" : " ", out);
		first = false;
		if (a->kind == FIX_OP)
			fputs(a->s, out);
		else if (a->kind == FIX_PATH && root)
			r = put_word(out, streq(root, "/") ? NULL : root, a->s);
		else
			r = put_word(out, NULL, a->s ? a->s : "");
	}
	if (fclose(out) != 0 && r >= 0)
		r = -ENOMEM;
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	return 0;
}

int doctor_fix_run(const struct doctor_ctx *c, struct doctor_finding *f, const struct doctor_fix_arg *args)
{
	char *node = NULL, *here = NULL;
	int r = render(c, args, false, &node);

	if (r >= 0 && doctor_root_elsewhere(c))
		r = render(c, args, true, &here);
	if (r < 0) {
		free(node);
		return r;
	}
	free(f->run);
	free(f->run_here);
	f->run = node;
	f->run_here = here;
	return 0;
}
