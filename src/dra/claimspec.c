/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-claim CDI spec (claimspec.h). Names follow NVIDIA's cdi.go (cdiVendor "k8s."+driver,
 * cdiClaimClass "claim", device "<uid>-<canonical name>") and the CDI library's
 * GenerateTransientSpecName() (vendor-class_<id>); docs/reference/dra.md §8.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdi/cdi.h"
#include "cdi/hooks.h"
#include "dra/claimspec.h"
#include "util/fileio.h"

#define CLASS "claim"

static int fmt(char *buf, size_t size, int n)
{
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int dra_cdi_spec_file(const char *driver, const char *uid, char *buf, size_t size)
{
	return fmt(buf, size, snprintf(buf, size, "k8s.%s-" CLASS "_%s.yaml", driver, uid));
}

int dra_cdi_kind(const char *driver, char *buf, size_t size)
{
	return fmt(buf, size, snprintf(buf, size, "k8s.%s/" CLASS, driver));
}

int dra_cdi_device_id(const char *driver, const char *uid, const char *device, char *buf, size_t size)
{
	return fmt(buf, size, snprintf(buf, size, "k8s.%s/" CLASS "=%s-%s", driver, uid, device));
}

/* Append src's arrays (env, mounts, deviceNodes, hooks) to dst's. */
static int merge_edits(json_t *dst, const json_t *src)
{
	const char *key;
	json_t *v;

	json_object_foreach ((json_t *)src, key, v) {
		json_t *have = json_object_get(dst, key);

		if (!json_is_array(v))
			continue;
		if (!have && json_object_set_new(dst, key, have = json_array()) < 0)
			return -ENOMEM;
		if (json_array_extend(have, v) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The node spec's device of uuid, renamed for the claim (a new reference), or NULL. */
static json_t *claim_device(const json_t *all, const struct dra_spec_device *d, const char *uid)
{
	size_t i;
	json_t *dev;

	json_array_foreach (all, i, dev) {
		json_t *copy, *edits;
		char name[256];

		if (!json_string_value(json_object_get(dev, "name")) ||
		    !streq(json_string_value(json_object_get(dev, "name")), d->uuid))
			continue;
		copy = json_deep_copy(dev);
		snprintf(name, sizeof(name), "%s-%s", uid, d->name);
		edits = json_object_get(copy, "containerEdits");
		if (!copy || json_object_set_new(copy, "name", json_string(name)) < 0 ||
		    (d->edits && (!edits || merge_edits(edits, d->edits) < 0))) {
			json_decref(copy);
			return NULL;
		}
		return copy;
	}
	return NULL;
}

/* What the generator said about uuid when it left it out (a missing device node names its path). */
static const char *why_left_out(const struct warnings *w, const char *uuid)
{
	for (size_t i = 0; i < w->n; i++)
		if (strstr(w->items[i], uuid))
			return w->items[i];
	return "its device node is missing under the dev root, or the GPU is lost";
}

static char *spec_dir(const struct dra_cdi_options *o)
{
	return root_path(o->host->root, o->cdi_root);
}

int dra_cdi_write(const struct node *n, const struct dra_cdi_options *o, const char *uid,
		  const struct dra_spec_device *devs, size_t n_devs, struct gerr *err)
{
	struct cdi_gen_options g = CDI_GEN_OPTIONS_INIT;
	struct cdi_hook_options hooks = {.path = o->hook_path};
	_cleanup_(warnings_clear) struct warnings warned = {0};
	_cleanup_free_ char *vendor = NULL, *dir = NULL;
	json_auto_t *spec = NULL, *mine = json_array();
	char file[320];
	int r;

	if (!mine || asprintf(&vendor, "k8s.%s", o->driver) < 0 || !(dir = spec_dir(o)))
		return gerr_set(err, ENOMEM, "out of memory");
	if (dra_cdi_spec_file(o->driver, uid, file, sizeof(file)) < 0)
		return gerr_set(err, ENAMETOOLONG, "claim uid %s: CDI spec name too long", uid);
	g.host = o->host;
	g.vendor = vendor;
	g.class = CLASS;
	g.names = CDI_NAMES_UUID;
	g.no_all_device = true;
	g.hooks = &hooks;
	g.warnings = &warned;
	if ((r = cdi_generate(n, &g, &spec, err)) < 0)
		return r;
	for (size_t i = 0; i < n_devs; i++) {
		json_t *dev = claim_device(json_object_get(spec, "devices"), &devs[i], uid);

		if (!dev)
			return gerr_set(err, ENODEV, "device %s (%s) is not in the node's CDI spec: %s", devs[i].name,
					devs[i].uuid, why_left_out(&warned, devs[i].uuid));
		if (json_array_append_new(mine, dev) < 0)
			return gerr_set(err, ENOMEM, "out of memory");
	}
	if (json_object_set(spec, "devices", mine) < 0 ||
	    json_object_set_new(spec, "cdiVersion", json_string(cdi_min_version(spec))) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	return cdi_write_spec(dir, file, spec, err);
}

int dra_cdi_remove(const struct dra_cdi_options *o, const char *uid, struct gerr *err)
{
	_cleanup_free_ char *dir = spec_dir(o);
	char file[320], kind[128];

	if (!dir)
		return gerr_set(err, ENOMEM, "out of memory");
	if (dra_cdi_spec_file(o->driver, uid, file, sizeof(file)) < 0 ||
	    dra_cdi_kind(o->driver, kind, sizeof(kind)) < 0)
		return gerr_set(err, ENAMETOOLONG, "claim uid %s: CDI spec name too long", uid);
	return cdi_remove_spec(dir, file, kind, err);
}
