/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CRI-O: its config is crio.conf plus every file of its drop-in dir, read in lexical order, each
 * overriding the keys it sets (cri-o pkg/config UpdateFromPath); runtimes are
 * [crio.runtime.runtimes.<handler>], CDI is always on and reads cdi_spec_dirs
 * (docs/reference/container-runtimes.md §3).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor/cluster.h"
#include "doctor/doctor.h"
#include "doctor/runtime_find.h"
#include "parse/toml.h"
#include "util/fileio.h"

/* nvidia-ctk before 1.20.0 wrote its CRI-O drop-in here, a directory CRI-O never reads. */
#define UNREAD_DROPIN_DIR "/etc/crio/conf.d"

static int cmp_str(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* Load one file below root and merge it over rt->crio; a parse error goes to crio_error. */
static int merge_file(const char *root, struct runtime_found *rt, const char *path)
{
	_cleanup_free_ char *p = root_path(root, path);
	_cleanup_(toml_freep) struct toml *t = NULL; /* toml_merge leaves it freeable */
	struct gerr err = {0};
	int r;

	if (!p)
		return -ENOMEM;
	r = toml_load_file(p, &t, &err);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		if (!rt->crio_error[0])
			snprintf(rt->crio_error, sizeof(rt->crio_error), "%s: %s", path,
				 err.msg[0] ? err.msg : strerror(-r));
		return 0;
	}
	r = toml_merge(rt->crio, t, -1);
	if (r < 0)
		return r;
	if (rt->n_crio_files < RT_MAX_FILES && !(rt->crio_files[rt->n_crio_files] = strdup(path)))
		return -ENOMEM;
	rt->n_crio_files++;
	return 0;
}

int crio_load(const struct doctor_ctx *c, struct runtime_found *rt)
{
	static char names[256][256];
	const char *root = doctor_root(c->o);
	_cleanup_free_ char *main_path = root_path(root, rt->config);
	struct stat st;
	size_t n;
	int r;

	if (!main_path || toml_parse("", 0, "crio", &rt->crio, NULL) < 0)
		return -ENOMEM;
	if (stat(main_path, &st) == 0 && (r = merge_file(root, rt, rt->config)) < 0)
		return r;
	n = doctor_dir_names(c, rt->dropins, NULL, names, ELEMENTSOF(names));
	qsort(names, n, sizeof(names[0]), cmp_str);
	for (size_t k = 0; k < n; k++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", rt->dropins, names[k]);
		if ((r = merge_file(root, rt, path)) < 0)
			return r;
	}
	return 0;
}

size_t crio_cdi_dirs(const struct runtime_found *rt, const char **dirs, size_t max)
{
	return cdi_spec_dirs_of(toml_get(toml_path(rt->crio, "crio", "runtime", NULL), "cdi_spec_dirs"), dirs, max);
}

static void files_evidence(const struct runtime_found *rt, struct doctor_finding *f)
{
	char line[1024] = "";

	for (unsigned k = 0; k < rt->n_crio_files && k < RT_MAX_FILES; k++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", k ? ", " : "", rt->crio_files[k]);
	if (rt->n_crio_files > RT_MAX_FILES)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " and %u more",
			 rt->n_crio_files - RT_MAX_FILES);
	doctor_evidence(f, "CRI-O found by %s; read: %s", rt->source, line[0] ? line : "no file (built-in defaults)");
}

/* Files of the unread drop-in dir that define the handler: nvidia-ctk < 1.20 put them there. */
static void unread_dropins(const struct doctor_ctx *c, const char *handler, struct doctor_finding *f)
{
	char names[32][256];
	size_t n = doctor_dir_names(c, UNREAD_DROPIN_DIR, NULL, names, ELEMENTSOF(names));

	for (size_t k = 0; k < n; k++) {
		char rel[PATH_MAX];
		_cleanup_free_ char *p = NULL;
		_cleanup_(toml_freep) struct toml *t = NULL;

		snprintf(rel, sizeof(rel), "%s/%s", UNREAD_DROPIN_DIR, names[k]);
		p = doctor_path(c, rel);
		if (p && toml_load_file(p, &t, NULL) >= 0 && toml_path(t, "crio", "runtime", "runtimes", handler, NULL))
			doctor_evidence(f,
					"%s defines runtimes.%s but CRI-O never reads %s/ (its drop-in dir is %s/; "
					"nvidia-ctk before 1.20.0 wrote there): move it",
					rel, handler, UNREAD_DROPIN_DIR, c->rt->dropins);
	}
}

static bool cdi_spec_present(const struct doctor_ctx *c)
{
	const char *dirs[16];
	char names[1][256];
	size_t n = crio_cdi_dirs(c->rt, dirs, ELEMENTSOF(dirs));

	for (size_t k = 0; k < n; k++)
		if (doctor_cdi_dir_files(c, dirs[k], names, 1))
			return true;
	return false;
}

/* CRI-O without runtime_path looks the handler's name up in its PATH (cri-o ValidateRuntimes). */
static bool on_crio_path(const struct doctor_ctx *c, const char *name, char *found, size_t size)
{
	static const char *const path[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
					   "/usr/bin",        "/sbin",          "/bin"};

	for (size_t k = 0; k < ELEMENTSOF(path); k++) {
		_cleanup_free_ char *p = NULL;

		snprintf(found, size, "%s/%s", path[k], name);
		p = doctor_path(c, found);
		if (p && access(p, X_OK) == 0)
			return true;
	}
	return false;
}

static void check_binary(struct doctor_ctx *c, const struct toml *rt, const char *handler)
{
	const char *bin = toml_string(rt, "runtime_path", "");
	char where[PATH_MAX];
	_cleanup_free_ char *p = *bin ? doctor_path(c, bin) : NULL;
	struct doctor_finding *f;

	if (*bin ? (p && access(p, X_OK) == 0) : on_crio_path(c, handler, where, sizeof(where)))
		return;
	f = doctor_report(c, "runtime.binary-missing", DOCTOR_FAIL, LINK_RUNTIME,
			  "install nvidia-container-toolkit (or fix runtime_path), then systemctl restart crio",
			  "CRI-O's \"%s\" runtime has no executable: CRI-O refuses the runtime and its pods fail to "
			  "start",
			  handler);
	doctor_evidence(f, "crio.runtime.runtimes.%s.runtime_path = \"%s\"%s", handler, bin,
			*bin ? ": not an executable" : ": unset, and no such binary in CRI-O's PATH");
	files_evidence(c->rt, f);
}

/*
 * default_runtime names a runtime no [crio.runtime.runtimes.<name>] table defines: CRI-O refuses to start
 * ("default_runtime set to %q, but no runtime entry table [crio.runtime.runtimes.%s] was found", cri-o
 * pkg/config/config.go ValidateRuntimes). crun (runc before 1.31) is defined by CRI-O's built-in config.
 */
static bool default_missing(struct doctor_ctx *c)
{
	const struct toml *rt = toml_path(c->rt->crio, "crio", "runtime", NULL);
	const char *def = toml_string(rt, "default_runtime", "");
	struct doctor_finding *f;
	char fix[512];

	if (!*def || streq(def, "crun") || streq(def, "runc") || toml_path(rt, "runtimes", def, NULL))
		return false;
	snprintf(
	    fix, sizeof(fix),
	    "define the runtime (nvidia-ctk runtime configure --runtime=crio%s writes its table in "
	    "/etc/crio/crio.conf.d/99-nvidia.toml) or set default_runtime back to crun, then systemctl restart crio",
	    streq(def, "nvidia") ? " --set-as-default" : "");
	f = doctor_report(c, "runtime.default-missing", DOCTOR_FAIL, LINK_RUNTIME, fix,
			  "CRI-O's default_runtime is \"%s\" but no [crio.runtime.runtimes.%s] table defines it: CRI-O "
			  "refuses to start, and no pod starts on this node",
			  def, def);
	doctor_evidence(f, "crio.runtime.default_runtime = \"%s\"", def);
	files_evidence(c->rt, f);
	return true;
}

int doctor_check_crio(struct doctor_ctx *c)
{
	const char *handler = c->o->runtime_class ? c->o->runtime_class : "nvidia";
	const struct toml *rt = toml_path(c->rt->crio, "crio", "runtime", "runtimes", handler, NULL);
	struct doctor_finding *f;
	size_t users;

	if (c->rt->crio_error[0]) {
		rt_config_invalid(
		    c, "fix the file at the line:col shown, check with crio config, then systemctl restart crio",
		    c->rt->crio_error);
		return 0;
	}
	if (default_missing(c))
		return 0;
	if (rt) {
		check_binary(c, rt, handler);
		return 0;
	}
	{
		struct inject_facts inj;

		/* any pod naming the handler, or a plugin handing out NVIDIA_VISIBLE_DEVICES alone */
		doctor_inject_facts(c, &inj);
		users = cluster_handler_users(c, handler, NULL) + (inject_has_env(&inj) && !inject_cdi_names(&inj));
	}
	if (!users && cdi_spec_present(c))
		return 0; /* CRI-O injects CDI devices itself; nobody asks for the handler */
	f = doctor_report(c, "runtime.nvidia-handler-missing", users ? DOCTOR_FAIL : DOCTOR_WARN, LINK_RUNTIME,
			  "nvidia-ctk runtime configure --runtime=crio (1.20.0 or later writes "
			  "/etc/crio/crio.conf.d/99-nvidia.toml), then systemctl restart crio; or use CDI (CRI-O "
			  "always reads CDI specs)",
			  "CRI-O has no runtime named \"%s\": pods with runtimeClassName %s fail to start, and no CDI "
			  "spec is there to inject the GPU instead",
			  handler, handler);
	doctor_evidence(f, "no [crio.runtime.runtimes.%s] in what CRI-O reads", handler);
	files_evidence(c->rt, f);
	unread_dropins(c, handler, f);
	cluster_handler_users(c, handler, f);
	return 0;
}
