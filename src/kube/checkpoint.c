/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kube/checkpoint.h"
#include "util/fileio.h"

#define CHECKPOINT_MAX (16u << 20)

static void free_strv(char **v, size_t n)
{
	for (size_t k = 0; k < n; k++)
		free(v[k]);
	free(v);
}

void checkpoint_free(struct checkpoint *c)
{
	if (!c)
		return;
	for (size_t k = 0; k < c->n_entries; k++) {
		free(c->entries[k].pod_uid);
		free(c->entries[k].container);
		free(c->entries[k].resource);
		free_strv(c->entries[k].device_ids, c->entries[k].n_ids);
	}
	for (size_t k = 0; k < c->n_registered; k++) {
		free(c->registered[k].resource);
		free_strv(c->registered[k].device_ids, c->registered[k].n_ids);
	}
	free(c->entries);
	free(c->registered);
	free(c);
}

/* Append the strings of a JSON array to *v. */
static int append_ids(const json_t *arr, char ***v, size_t *n)
{
	size_t i;
	json_t *s;
	char **nv;

	if (!json_is_array(arr))
		return -EINVAL;
	nv = realloc(*v, (*n + json_array_size(arr) + 1) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	json_array_foreach (arr, i, s) {
		if (!json_is_string(s))
			return -EINVAL;
		nv[*n] = strdup(json_string_value(s));
		if (!nv[*n])
			return -ENOMEM;
		(*n)++;
	}
	return 0;
}

static char *dup_member(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return strdup(s ? s : "");
}

static int parse_entry(const json_t *e, struct checkpoint_entry *out, int *format)
{
	const json_t *ids = json_object_get(e, "DeviceIDs");
	const char *numa;
	json_t *v;

	out->pod_uid = dup_member(e, "PodUID");
	out->container = dup_member(e, "ContainerName");
	out->resource = dup_member(e, "ResourceName");
	if (!out->pod_uid || !out->container || !out->resource)
		return -ENOMEM;
	if (json_is_array(ids)) {
		*format = 1;
		return append_ids(ids, &out->device_ids, &out->n_ids);
	}
	if (!json_is_object(ids))
		return ids && !json_is_null(ids) ? -EINVAL : 0;
	json_object_foreach ((json_t *)ids, numa, v) {
		int r = append_ids(v, &out->device_ids, &out->n_ids);

		if (r < 0)
			return r;
	}
	return 0;
}

int checkpoint_parse(const char *text, size_t len, const char *name, struct checkpoint **ret, struct gerr *err)
{
	_cleanup_(checkpoint_freep) struct checkpoint *c = calloc(1, sizeof(*c));
	json_error_t je;
	json_t *root, *data, *entries, *reg, *e, *v;
	const char *res;
	size_t i;
	int r = 0;

	if (!c)
		return -ENOMEM;
	root = json_loadb(text, len, 0, &je);
	if (!root)
		return gerr_set(err, EINVAL, "%s:%d:%d: %s", name, je.line, je.column, je.text);
	data = json_object_get(root, "Data");
	if (!json_is_object(data)) {
		json_decref(root);
		return gerr_set(err, EINVAL, "%s: no \"Data\" object; is this a kubelet device checkpoint?", name);
	}
	c->format = 2;
	c->checksum = (uint64_t)json_integer_value(json_object_get(root, "Checksum"));
	entries = json_object_get(data, "PodDeviceEntries");
	if (json_is_array(entries) && json_array_size(entries)) {
		c->entries = calloc(json_array_size(entries), sizeof(*c->entries));
		if (!c->entries)
			r = -ENOMEM;
		json_array_foreach (entries, i, e) {
			if (r < 0)
				break;
			c->n_entries++;
			r = parse_entry(e, &c->entries[i], &c->format);
			if (r == -EINVAL)
				r = gerr_set(err, EINVAL,
					     "%s: PodDeviceEntries[%zu].DeviceIDs is neither a list nor a map of lists",
					     name, i);
		}
	}
	reg = json_object_get(data, "RegisteredDevices");
	if (r >= 0 && json_is_object(reg) && json_object_size(reg)) {
		c->registered = calloc(json_object_size(reg), sizeof(*c->registered));
		if (!c->registered)
			r = -ENOMEM;
		json_object_foreach (reg, res, v) {
			struct checkpoint_registered *g;

			if (r < 0)
				break;
			g = &c->registered[c->n_registered++];
			g->resource = strdup(res);
			r = g->resource ? append_ids(v, &g->device_ids, &g->n_ids) : -ENOMEM;
			if (r == -EINVAL)
				r = gerr_set(err, EINVAL, "%s: RegisteredDevices[\"%s\"] is not a list of IDs", name,
					     res);
		}
	}
	json_decref(root);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

static int parse_text(const char *path, char **text, size_t len, void *ret, struct gerr *err)
{
	return checkpoint_parse(*text, len, path, ret, err);
}

int checkpoint_load(const char *path, struct checkpoint **ret, struct gerr *err)
{
	return read_and_parse(path, CHECKPOINT_MAX, parse_text, ret, err);
}

const struct checkpoint_registered *checkpoint_find_resource(const struct checkpoint *c, const char *resource)
{
	for (size_t k = 0; c && k < c->n_registered; k++)
		if (streq(c->registered[k].resource, resource))
			return &c->registered[k];
	return NULL;
}
