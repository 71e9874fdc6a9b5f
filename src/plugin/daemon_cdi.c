/* SPDX-License-Identifier: Apache-2.0 */
/* CDI spec upkeep of `gpulet plugin` (interface: daemon_cdi.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdi/cdi.h"
#include "cdi/hooks.h"
#include "plugin/daemon_cdi.h"
#include "util/fileio.h"
#include "util/log.h"

/*
 * Another spec of our devices beside ours (runtimes drop both) or in the dir that wins (used
 * instead): say so with the file and the fix, as `cdi generate` refuses. Ours is still written:
 * Allocate's names need it, and the plugin must not leave the node without a spec.
 */
static void log_conflicts(const char *dir, const char *file, const json_t *spec)
{
	_cleanup_(cdi_report_clear) struct cdi_report rep = {0};

	if (cdi_spec_conflicts(dir, file, spec, &rep) < 0)
		return;
	for (size_t i = 0; i < rep.n_problems; i++) {
		const struct cdi_problem *p = &rep.problems[i];
		bool same_dir = streq(p->code, "conflict-same-dir");

		if (p->error)
			log_error("Another CDI spec defines the plugin's devices; the runtime will not use ours",
				  "file=%s devices=\"%s\" where=%s fix=\"%s\"", p->file, p->message,
				  same_dir ? "same-dir" : "dir-that-wins",
				  same_dir ? "remove that file: runtimes drop a device defined twice in one dir, and "
					     "every container asking for it fails"
					   : "remove that file: runtimes use its definitions instead of the plugin's");
	}
}

void daemon_cdi_names_clear(struct dp_cdi_names *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->names[i]);
	free(c->names);
	*c = (struct dp_cdi_names){0};
}

/* The names of spec's devices[] into c (replacing what it held), the file it was written to in dir. */
static int names_of_spec(const json_t *spec, const char *dir, struct dp_cdi_names *c)
{
	const json_t *devices = json_object_get(spec, "devices"), *dev;
	size_t i;

	daemon_cdi_names_clear(c);
	c->names = calloc(json_array_size(devices) + 1, sizeof(*c->names));
	if (!c->names)
		return -ENOMEM;
	json_array_foreach (devices, i, dev) {
		const char *name = json_string_value(json_object_get(dev, "name"));

		if (name && !(c->names[c->n++] = strdup(name)))
			return -ENOMEM;
	}
	snprintf(c->file, sizeof(c->file), "%s/%s", dir, DP_CDI_SPEC_FILE);
	return 0;
}

char *daemon_cdi_dir(const struct plugin_config *cfg)
{
	return cfg->cdi_spec_dir[0] ? strdup(cfg->cdi_spec_dir) : root_path(cfg->host->root, CDI_DYNAMIC_DIR);
}

/*
 * With a CDI device-list strategy the names Allocate returns must resolve: write the node's spec
 * for vendor k8s.device-plugin.nvidia.com, class gpu, named like --device-id-strategy, to
 * /var/run/cdi at every (re)build (docs/reference/device-plugin.md §8), with the OCI hooks of
 * --nvidia-cdi-hook-path minus --cdi-disable-hooks (docs/reference/cdi-hook.md §4).
 */
int daemon_cdi_write_spec(const struct plugin_config *cfg, const struct node *node, struct dp_cdi_names *names)
{
	struct cdi_gen_options o = CDI_GEN_OPTIONS_INIT;
	struct cdi_hook_options hooks = {.path = cfg->nvidia_cdi_hook_path, .disabled = cfg->cdi_disable_hooks};
	_cleanup_(warnings_clear) struct warnings left_out = {0};
	_cleanup_free_ char *dir = NULL;
	json_t *spec = NULL;
	struct gerr err = {0};
	int r;

	if (!(cfg->device_list_strategy & DLS_CDI_ANY) || !node)
		return 0;
	o.host = cfg->host;
	o.vendor = DP_CDI_VENDOR;
	o.class = DP_CDI_CLASS;
	o.names = cfg->device_id_strategy == DEVICE_ID_INDEX ? CDI_NAMES_INDEX : CDI_NAMES_UUID;
	o.hooks = &hooks;
	o.features = cfg->cdi_feature_flags;
	o.warnings = &left_out; /* a partial spec is still written (as `cdi generate` does), but never silently */
	/* none hands a MIG-enabled GPU out whole: its name must resolve (docs/reference/device-plugin.md §8) */
	o.whole_mig_enabled = cfg->mig_strategy == MIG_STRATEGY_NONE;
	dir = daemon_cdi_dir(cfg);
	r = dir ? cdi_generate(node, &o, &spec, &err) : gerr_set(&err, ENOMEM, "out of memory");
	if (r >= 0) {
		log_conflicts(dir, DP_CDI_SPEC_FILE, spec);
		r = cdi_write_spec(dir, DP_CDI_SPEC_FILE, spec, &err);
	}
	/* Allocate hands out only what the file now on disk defines; nothing when it could not be written */
	daemon_cdi_names_clear(names);
	if (r >= 0 && names_of_spec(spec, dir, names) < 0)
		r = gerr_set(&err, ENOMEM, "out of memory");
	json_decref(spec);
	if (r < 0)
		log_error("Cannot write the CDI spec; CDI device names will not resolve in the runtime",
			  "dir=%s error=\"%s\"", dir ? dir : CDI_DYNAMIC_DIR, err.msg);
	else
		log_info("Wrote CDI spec", "file=%s/%s", dir, DP_CDI_SPEC_FILE);
	for (size_t i = 0; r >= 0 && i < left_out.n; i++)
		log_warn("The CDI spec leaves this out", "item=\"%s\"", left_out.items[i]);
	return r < 0 ? r : 0;
}
