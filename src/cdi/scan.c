/* SPDX-License-Identifier: Apache-2.0 */
/* CDI spec dirs as a runtime scans them: per-file validation, devices defined twice, the device list. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cdi/internal.h"
#include "util/fileio.h"

/*
 * Can uid/gid read path (and search every dir above it, below root)? Mode bits only: enough for
 * the usual mistake (0600 spec, 0700 dir) without being that user.
 */
static bool user_can(const struct stat *st, uid_t uid, gid_t gid, mode_t want)
{
	if (uid == 0)
		return true;
	if (st->st_uid == uid)
		return (st->st_mode & (want << 6)) == (want << 6);
	if (st->st_gid == gid)
		return (st->st_mode & (want << 3)) == (want << 3);
	return (st->st_mode & want) == want;
}

static bool runtime_can_read(const struct cdi_validate_options *o, const char *path, bool dir)
{
	_cleanup_free_ char *copy = strdup(path);
	size_t skip = o->root && *o->root ? strlen(o->root) : 0;
	struct stat st;

	if (!copy || o->runtime_uid == 0)
		return true;
	/* every ancestor below the root prefix needs x */
	for (char *p = copy + skip + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		if (stat(copy, &st) == 0 && !user_can(&st, o->runtime_uid, o->runtime_gid, 01))
			return false;
		*p = '/';
	}
	return stat(path, &st) == 0 && user_can(&st, o->runtime_uid, o->runtime_gid, dir ? 05 : 04);
}

/* Devices of loadable files, for duplicate detection and listing. */
struct devref {
	char *qname; /* vendor/class=name */
	const char *file;
	size_t prio;
};

struct scan {
	char **files; /* owned copies, referenced by devs */
	size_t n_files;
	struct devref *devs;
	size_t n_devs;
};

static void scan_done(struct scan *s)
{
	free_members(s->devs, s->n_devs, qname);
	for (size_t i = 0; i < s->n_files; i++)
		free(s->files[i]);
	free(s->files);
}

static bool blocks_loading(const struct cdi_problem *p)
{
	return p->error && (streq(p->category, "spec-invalid") || streq(p->category, "spec-unreadable") ||
			    streq(p->category, "version-too-new"));
}

static int scan_add_devices(struct scan *s, const char *file, size_t prio, const json_t *spec)
{
	const char *kind = json_string_value(json_object_get(spec, "kind"));
	const json_t *d;
	char **nf;
	size_t i;

	nf = realloc(s->files, (s->n_files + 1) * sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	s->files = nf;
	if (!(nf[s->n_files] = strdup(file)))
		return -ENOMEM;
	file = nf[s->n_files++];
	json_array_foreach (json_object_get(spec, "devices"), i, d) {
		struct devref *nd = realloc(s->devs, (s->n_devs + 1) * sizeof(*nd));

		if (!nd)
			return -ENOMEM;
		s->devs = nd;
		if (asprintf(&nd[s->n_devs].qname, "%s=%s", kind, json_string_value(json_object_get(d, "name"))) < 0)
			return -ENOMEM;
		nd[s->n_devs].file = file;
		nd[s->n_devs++].prio = prio;
	}
	return 0;
}

/* Validate one file (path as read); add its devices to s when a runtime would load it. */
static int scan_file(const char *path, size_t prio, const struct cdi_validate_options *o, struct cdi_report *rep,
		     struct scan *s)
{
	struct cdi_vctx v = {.o = o, .rep = rep, .file = path};
	json_auto_t *spec = NULL;
	struct gerr err = {0};
	size_t first = rep->n_problems;
	bool loads = true;
	int r;

	rep->n_files++;
	if (!cdi_has_ext(path, ".json") && !cdi_has_ext(path, ".yaml"))
		cdi_problem(&v, "not-scanned", "", NULL, "runtimes read only *.json and *.yaml spec files");
	if (!runtime_can_read(o, path, false)) {
		cdi_problem(&v, "unreadable", "", NULL, "the runtime user %u cannot read %s", (unsigned)o->runtime_uid,
			    path);
		return v.oom ? -ENOMEM : 0;
	}
	r = cdi_read_spec(path, &spec, &err);
	if (r == -ENOMEM)
		return r;
	if (r == -EACCES || r == -EPERM || r == -EISDIR)
		cdi_problem(&v, "unreadable", "", NULL, "%s", err.msg);
	else if (r == -ENOENT)
		cdi_problem(&v, "missing-file", "", NULL, "%s", err.msg);
	else if (r < 0)
		cdi_problem(&v, "parse-error", "", NULL, "%s", err.msg);
	else if (cdi_canonical_keys(&v, spec) < 0 || cdi_validate_spec(path, spec, o, rep) < 0)
		return -ENOMEM;
	if (v.oom)
		return -ENOMEM;
	for (size_t i = first; i < rep->n_problems; i++)
		if (blocks_loading(&rep->problems[i]))
			loads = false;
	if (!loads || !s || (!cdi_has_ext(path, ".json") && !cdi_has_ext(path, ".yaml")))
		return 0;
	return scan_add_devices(s, path, prio, spec);
}

static int devref_cmp(const void *a, const void *b)
{
	const struct devref *x = a, *y = b;
	int c;

	if ((c = strcmp(x->qname, y->qname)) || (c = CMP(x->prio, y->prio)))
		return c;
	return strcmp(x->file, y->file);
}

/*
 * The devices of s grouped by qualified name, each group sorted by priority (lowest first) then
 * file: the order in which a runtime's later dir wins. fn gets each group.
 */
typedef int (*group_fn)(const struct devref *grp, size_t n, void *userdata);

static int each_group(struct scan *s, group_fn fn, void *userdata)
{
	int r = 0;

	if (s->n_devs > 1)
		qsort(s->devs, s->n_devs, sizeof(*s->devs), devref_cmp);
	for (size_t i = 0, j; r >= 0 && i < s->n_devs; i = j) {
		for (j = i + 1; j < s->n_devs && streq(s->devs[j].qname, s->devs[i].qname); j++)
			;
		r = fn(&s->devs[i], j - i, userdata);
	}
	return r;
}

/* Duplicates: same name at one priority = error on each file; at a lower priority = shadowed warning. */
static int report_group(const struct devref *grp, size_t n, void *userdata)
{
	struct cdi_vctx *v = userdata;
	const struct devref *top = &grp[n - 1];
	size_t at_top = 0;

	for (size_t k = 0; k < n; k++)
		at_top += grp[k].prio == top->prio;
	for (size_t k = 0; k < n; k++) {
		const struct devref *d = &grp[k];

		v->file = d->file;
		if (d->prio < top->prio) {
			cdi_problem(v, "shadowed-device", "", NULL, "device %s is also defined in %s, which wins",
				    d->qname, top->file);
			continue;
		}
		if (at_top < 2)
			continue;
		/* name the other file at this priority */
		const struct devref *other = k + 1 < n ? &grp[k + 1] : &grp[k - 1];

		cdi_problem(v, "duplicate-device", "", NULL,
			    "device %s is also defined in %s at the same priority: the runtime drops it", d->qname,
			    other->file);
	}
	return v->oom ? -ENOMEM : 0;
}

static int report_duplicates(struct scan *s, const struct cdi_validate_options *o, struct cdi_report *rep)
{
	struct cdi_vctx v = {.o = o, .rep = rep};

	return each_group(s, report_group, &v);
}

int cdi_validate_files(const char *const *files, size_t n, const struct cdi_validate_options *o, struct cdi_report *rep)
{
	struct scan s = {0};
	int r = 0;

	for (size_t i = 0; i < n && r >= 0; i++)
		r = scan_file(files[i], 0, o, rep, &s);
	if (r >= 0)
		r = report_duplicates(&s, o, rep);
	scan_done(&s);
	return r;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *cdi_dir_path(const char *root, const char *dir)
{
	return dir[0] == '/' ? root_path(root, dir) : strdup(dir);
}

/* Spec files of one dir in name order (the CDI cache is not recursive). */
static int scan_dir(const char *dir, size_t prio, const struct cdi_validate_options *o, struct cdi_report *rep,
		    struct scan *s)
{
	_cleanup_free_ char *p = cdi_dir_path(o->root, dir);
	struct cdi_vctx v = {.o = o, .rep = rep};
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	struct stat st;
	DIR *dh;
	int r = 0;

	if (!p)
		return -ENOMEM;
	v.file = p;
	if (stat(p, &st) < 0)
		return 0; /* a missing dir is normal */
	if (!S_ISDIR(st.st_mode) || !runtime_can_read(o, p, true) || !(dh = opendir(p))) {
		cdi_problem(&v, "dir-unreadable", "", NULL, "the runtime cannot list spec dir %s", p);
		return v.oom ? -ENOMEM : 0;
	}
	while ((de = readdir(dh))) {
		char **nn;

		if (de->d_name[0] == '.' || (!cdi_has_ext(de->d_name, ".json") && !cdi_has_ext(de->d_name, ".yaml") &&
					     !cdi_has_ext(de->d_name, ".yml")))
			continue;
		nn = realloc(names, (n + 1) * sizeof(*nn));
		if (!nn || !(nn[n] = strdup(de->d_name))) {
			free(nn ? nn : names);
			names = NULL;
			n = 0;
			r = -ENOMEM;
			break;
		}
		names = nn;
		n++;
	}
	closedir(dh);
	if (n > 1)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *fp = NULL;

		if (r >= 0 && asprintf(&fp, "%s/%s", p, names[i]) < 0)
			r = -ENOMEM;
		if (r >= 0 && stat(fp, &st) == 0 && S_ISREG(st.st_mode))
			r = scan_file(fp, prio, o, rep, s);
		free(names[i]);
	}
	free(names);
	return r;
}

static const char *const default_dirs[] = {CDI_STATIC_DIR, CDI_DYNAMIC_DIR};

static int scan_dirs(const char *const *dirs, size_t n, const struct cdi_validate_options *o, struct cdi_report *rep,
		     struct scan *s)
{
	int r = 0;

	if (!dirs || n == 0) {
		dirs = default_dirs;
		n = ELEMENTSOF(default_dirs);
	}
	for (size_t i = 0; i < n && r >= 0; i++)
		r = scan_dir(dirs[i], i, o, rep, s);
	return r;
}

int cdi_validate_dirs(const char *const *dirs, size_t n, const struct cdi_validate_options *o, struct cdi_report *rep)
{
	struct scan s = {0};
	int r = scan_dirs(dirs, n, o, rep, &s);

	if (r >= 0)
		r = report_duplicates(&s, o, rep);
	scan_done(&s);
	return r;
}

static int list_group(const struct devref *grp, size_t n, void *userdata)
{
	const struct devref *top = &grp[n - 1];
	const char *eq = strchr(top->qname, '=');
	json_t *e, *shadows;

	e = json_pack("{s:s, s:s%, s:s, s:s, s:[], s:b}", "name", top->qname, "kind", top->qname,
		      (size_t)(eq - top->qname), "device", eq + 1, "file", top->file, "shadows", "conflict",
		      n > 1 && grp[n - 2].prio == top->prio);
	shadows = json_object_get(e, "shadows");
	for (size_t k = 0; e && k + 1 < n; k++)
		if (jpush(shadows, json_string(grp[k].file)) < 0) {
			json_decref(e);
			return -ENOMEM;
		}
	return jpush(userdata, e);
}

int cdi_list_dirs(const char *root, const char *const *dirs, size_t n, json_t **ret, struct gerr *err)
{
	struct cdi_validate_options o = {.root = root, .no_host_paths = true};
	_cleanup_(cdi_report_clear) struct cdi_report rep = {0};
	struct scan s = {0};
	json_auto_t *out = json_array();
	int r;

	if (!out)
		return gerr_set(err, ENOMEM, "out of memory");
	r = scan_dirs(dirs, n, &o, &rep, &s);
	if (r >= 0)
		r = each_group(&s, list_group, out);
	scan_done(&s);
	if (r < 0)
		return gerr_set(err, -r, "listing CDI devices: %s", strerror(-r));
	*ret = TAKE_PTR(out);
	return 0;
}

/* ---- conflicts of a spec about to be written ------------------------------------------------- */

/* The standard spec dirs by priority, and the suffixes that name them (/var/run is a link to /run). */
static const struct {
	const char *suffix, *other;
	bool other_wins;
} std_dirs[] = {
    {CDI_STATIC_DIR, CDI_DYNAMIC_DIR, true},
    {CDI_DYNAMIC_DIR, CDI_STATIC_DIR, false},
    {"/run/cdi", CDI_STATIC_DIR, false},
};

struct conflicts {
	const char *target; /* the file we write */
	struct cdi_report *rep;
	size_t target_prio;
	int oom;
};

static int conflict_group(const struct devref *grp, size_t n, void *userdata)
{
	struct conflicts *c = userdata;
	struct cdi_vctx v = {.rep = c->rep};
	bool ours = false;

	for (size_t k = 0; k < n; k++)
		ours = ours || streq(grp[k].file, c->target);
	for (size_t k = 0; ours && k < n; k++) {
		const struct devref *d = &grp[k];
		const char *code = d->prio == c->target_prio  ? "conflict-same-dir"
				   : d->prio > c->target_prio ? "conflict-shadowed"
							      : "conflict-shadows";

		if (streq(d->file, c->target))
			continue;
		v.file = d->file;
		cdi_problem(&v, code, "", NULL, "%s", d->qname);
	}
	return v.oom ? -ENOMEM : 0;
}

/* One problem per other file: its code, and the device names it shares with ours in the message. */
static int merge_by_file(struct cdi_report *in, struct cdi_report *out)
{
	struct cdi_vctx v = {.rep = out};

	for (size_t i = 0; i < in->n_problems; i++) {
		const struct cdi_problem *p = &in->problems[i];
		_cleanup_free_ char *names = strdup(p->message);
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = streq(in->problems[j].file, p->file);
		for (size_t j = i + 1; names && !seen && j < in->n_problems; j++) {
			char *more = NULL;

			if (!streq(in->problems[j].file, p->file))
				continue;
			if (asprintf(&more, "%s, %s", names, in->problems[j].message) < 0)
				more = NULL;
			free(names);
			names = more;
		}
		if (!names)
			return -ENOMEM;
		if (seen)
			continue;
		v.file = p->file;
		cdi_problem(&v, p->code, "", NULL, "%s", names);
	}
	return v.oom ? -ENOMEM : 0;
}

int cdi_spec_conflicts(const char *dir, const char *file_name, const json_t *spec, struct cdi_report *rep)
{
	struct cdi_validate_options o = {.no_host_paths = true};
	_cleanup_(cdi_report_clear) struct cdi_report scratch = {0}, per_dev = {0};
	_cleanup_free_ char *p = cdi_dir_path(NULL, dir), *target = NULL, *other = NULL;
	struct conflicts c = {.rep = &per_dev, .target_prio = 1};
	struct scan s = {0};
	size_t len, w = 0;
	int r;

	if (!p)
		return -ENOMEM;
	len = strlen(p);
	while (len > 1 && p[len - 1] == '/')
		p[--len] = 0;
	if (asprintf(&target, "%s/%s", p, file_name) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(std_dirs) && !other; i++) {
		size_t n = strlen(std_dirs[i].suffix);

		if (len >= n && streq(p + len - n, std_dirs[i].suffix) &&
		    asprintf(&other, "%.*s%s", (int)(len - n), p, std_dirs[i].other) < 0)
			return -ENOMEM;
		if (other)
			c.target_prio = std_dirs[i].other_wins ? 0 : 1;
	}
	c.target = target;
	r = scan_dir(p, c.target_prio, &o, &scratch, &s);
	if (r >= 0 && other)
		r = scan_dir(other, 1 - c.target_prio, &o, &scratch, &s);
	/* the file we replace does not count; ours takes its place */
	for (size_t i = 0; r >= 0 && i < s.n_devs; i++) {
		if (streq(s.devs[i].file, target))
			free(s.devs[i].qname);
		else
			s.devs[w++] = s.devs[i];
	}
	s.n_devs = w;
	if (r >= 0)
		r = scan_add_devices(&s, target, c.target_prio, spec);
	if (r >= 0)
		r = each_group(&s, conflict_group, &c);
	if (r >= 0)
		r = merge_by_file(&per_dev, rep);
	scan_done(&s);
	return r < 0 ? r : 0;
}

void cdi_report_clear(struct cdi_report *r)
{
	for (size_t i = 0; i < r->n_problems; i++) {
		free(r->problems[i].file);
		free(r->problems[i].json_path);
		free(r->problems[i].message);
		free(r->problems[i].fix);
	}
	free(r->problems);
	*r = (struct cdi_report){0};
}

json_t *cdi_report_to_json(const struct cdi_report *r)
{
	json_t *doc =
	    json_pack("{s:I, s:I, s:I, s:[]}", "files", (json_int_t)r->n_files, "errors", (json_int_t)r->n_errors,
		      "warnings", (json_int_t)(r->n_problems - r->n_errors), "problems");

	for (size_t i = 0; doc && i < r->n_problems; i++) {
		const struct cdi_problem *p = &r->problems[i];

		if (jpush(json_object_get(doc, "problems"),
			  json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "code", p->code, "category", p->category,
				    "severity", p->error ? "error" : "warning", "file", p->file, "path", p->json_path,
				    "message", p->message, "fix", p->fix)) < 0) {
			json_decref(doc);
			return NULL;
		}
	}
	return doc;
}
