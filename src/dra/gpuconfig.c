/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GpuConfig / MigDeviceConfig decoding and validation: the field list, defaults and checks of
 * NVIDIA's api/nvidia.com/resource/v1beta1 (gpuconfig.go, migconfig.go, sharing.go, validate.go at
 * v25.12.0; docs/reference/dra.md §6). Strict like sigs.k8s.io/json's UnmarshalStrict that NVIDIA's
 * StrictDecoder uses: field names match case-sensitively, an unknown one is an error, null is absent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dra/gpuconfig.h"
#include "dra/quantity.h"
#include "util/enumtab.h"

static const struct enum_name strategies[] = {{DRA_SHARE_TIME_SLICING, "TimeSlicing"}, {DRA_SHARE_MPS, "MPS"}};
static const struct enum_name intervals[] = {
    {DRA_TS_DEFAULT, "Default"}, {DRA_TS_SHORT, "Short"}, {DRA_TS_MEDIUM, "Medium"}, {DRA_TS_LONG, "Long"}};
static const struct enum_name kinds[] = {{DRA_CFG_GPU, "GpuConfig"}, {DRA_CFG_MIG, "MigDeviceConfig"}};
/* NVIDIA's other kinds of the same group: a clear "not served" rather than "unknown kind" */
static const char *const other_kinds[] = {"VfioDeviceConfig", "ComputeDomainChannelConfig",
					  "ComputeDomainDaemonConfig"};

const char *dra_strategy_name(enum dra_strategy s)
{
	return s == DRA_SHARE_NONE ? "none" : enum_to_name(strategies, s, "?");
}
const char *dra_interval_name(enum dra_interval i)
{
	return enum_to_name(intervals, i, "?");
}
const char *dra_cfg_kind_name(enum dra_cfg_kind k)
{
	return enum_to_name(kinds, k, "?");
}

void dra_sharing_clear(struct dra_sharing *s)
{
	for (size_t i = 0; i < s->n_per_dev; i++)
		free(s->per_dev[i].key);
	free(s->per_dev);
	*s = (struct dra_sharing){.thread_pct = -1, .pinned = -1};
}

/* The fields an object may have: anything else is an error naming where. */
static int only_fields(const json_t *obj, const char *where, const char *const *allowed, struct gerr *err)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return gerr_set(err, EINVAL, "%s: want an object", where);
	json_object_foreach ((json_t *)obj, key, v) {
		bool ok = false;

		for (size_t i = 0; allowed[i] && !ok; i++)
			ok = streq(allowed[i], key);
		if (!ok)
			return gerr_set(err, EINVAL, "%s%sunknown field \"%s\"", where, *where ? ": " : "", key);
	}
	return 0;
}

/* field key of obj: NULL when absent or null; -EINVAL when not a string */
static int get_str(const json_t *obj, const char *key, const char *where, const char **ret, struct gerr *err)
{
	const json_t *v = json_object_get(obj, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return gerr_set(err, EINVAL, "%s%s: want a string", where, key);
	*ret = json_string_value(v);
	return 0;
}

/* a resource.Quantity: a string, or a JSON number (Quantity.UnmarshalJSON parses its text) */
static int get_quantity(const json_t *v, const char *where, int64_t *ret, struct gerr *err)
{
	char num[64];
	int r;

	if (json_is_string(v))
		r = quantity_parse(json_string_value(v), ret, err);
	else if (json_is_integer(v)) {
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		r = quantity_parse(num, ret, err);
	} else if (json_is_real(v)) {
		snprintf(num, sizeof(num), "%.17g", json_real_value(v));
		r = quantity_parse(num, ret, err);
	} else
		return gerr_set(err, EINVAL, "%s: want a quantity such as \"10Gi\"", where);
	return r < 0 ? gerr_prefix(err, "%s: ", where) : 0;
}

static int parse_mps(const json_t *mps, struct dra_sharing *s, struct gerr *err)
{
	static const char *const fields[] = {"defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit",
					     "defaultPerDevicePinnedMemoryLimit", NULL};
	const json_t *v;
	const char *key;
	json_t *q;
	int r;

	if (!mps || json_is_null(mps))
		return 0;
	if ((r = only_fields(mps, "sharing.mpsConfig", fields, err)) < 0)
		return r;
	v = json_object_get(mps, fields[0]);
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v))
			return gerr_set(err, EINVAL,
					"sharing.mpsConfig.defaultActiveThreadPercentage: want an integer");
		/* MpsConfig.Validate() */
		if (json_integer_value(v) < 0)
			return gerr_set(err, EINVAL,
					"sharing.mpsConfig.defaultActiveThreadPercentage: active thread percentage "
					"must not be negative");
		if (json_integer_value(v) > 100)
			return gerr_set(err, EINVAL,
					"sharing.mpsConfig.defaultActiveThreadPercentage: active thread percentage "
					"must not be greater than 100");
		s->thread_pct = (int)json_integer_value(v);
	}
	v = json_object_get(mps, fields[1]);
	if (v && !json_is_null(v) &&
	    (r = get_quantity(v, "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit", &s->pinned, err)) < 0)
		return r;
	v = json_object_get(mps, fields[2]);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return gerr_set(err, EINVAL,
				"sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit: want an object of device "
				"(UUID or index) to quantity");
	if (!(s->per_dev = calloc(json_object_size(v) ? json_object_size(v) : 1, sizeof(*s->per_dev))))
		return gerr_set(err, ENOMEM, "out of memory");
	json_object_foreach ((json_t *)v, key, q) {
		char where[160];
		struct dra_pinned *p = &s->per_dev[s->n_per_dev];

		snprintf(where, sizeof(where), "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit.%s", key);
		if ((r = get_quantity(q, where, &p->bytes, err)) < 0)
			return r;
		if (!(p->key = strdup(key)))
			return gerr_set(err, ENOMEM, "out of memory");
		s->n_per_dev++;
	}
	return 0;
}

static int parse_sharing(const json_t *sh, const struct dra_gates *g, struct dra_sharing *s, struct gerr *err)
{
	/* GpuSharing has timeSlicingConfig, MigDeviceSharing does not */
	static const char *const gpu_fields[] = {"strategy", "timeSlicingConfig", "mpsConfig", NULL};
	static const char *const mig_fields[] = {"strategy", "mpsConfig", NULL};
	const json_t *ts = json_object_get(sh, "timeSlicingConfig"), *mps = json_object_get(sh, "mpsConfig");
	const char *strategy = NULL, *interval = NULL;
	int v, r;

	if (!sh || json_is_null(sh))
		return 0; /* no sharing: the GPU as it is */
	if ((r = only_fields(sh, "sharing", s->kind == DRA_CFG_GPU ? gpu_fields : mig_fields, err)) < 0)
		return r;
	if ((r = get_str(sh, "strategy", "sharing.", &strategy, err)) < 0)
		return r;
	/* GpuSharingStrategy.Validate(): the strategy must be known and its gate on */
	if (!strategy || enum_from_name(strategies, strategy, &v) < 0)
		return gerr_set(err, EINVAL,
				"sharing.strategy: unknown GPU sharing strategy \"%s\" (want TimeSlicing or MPS)",
				strategy ? strategy : "");
	s->strategy = (enum dra_strategy)v;
	if ((s->strategy == DRA_SHARE_TIME_SLICING && !g->time_slicing) || (s->strategy == DRA_SHARE_MPS && !g->mps))
		return gerr_set(err, EINVAL,
				"sharing.strategy %s is turned off on this node (--feature-gates %s=false)", strategy,
				s->strategy == DRA_SHARE_MPS ? "MPSSupport" : "TimeSlicingSettings");
	ts = ts && json_is_null(ts) ? NULL : ts;
	mps = mps && json_is_null(mps) ? NULL : mps;
	/* GetTimeSlicingConfig() / GetMpsConfig(): the other strategy's config is an error */
	if (s->strategy == DRA_SHARE_TIME_SLICING && mps)
		return gerr_set(err, EINVAL, "sharing.mpsConfig: cannot use MpsConfig with the 'TimeSlicing' strategy");
	if (s->strategy == DRA_SHARE_MPS && ts)
		return gerr_set(err, EINVAL,
				"sharing.timeSlicingConfig: cannot use TimeSlicingConfig with the 'MPS' strategy");
	if (ts) {
		static const char *const ts_fields[] = {"interval", NULL};

		if ((r = only_fields(ts, "sharing.timeSlicingConfig", ts_fields, err)) < 0 ||
		    (r = get_str(ts, "interval", "sharing.timeSlicingConfig.", &interval, err)) < 0)
			return r;
	}
	/* Normalize(): TimeSlicing without an interval is Default; TimeSliceInterval.Validate() */
	if (interval && enum_from_name(intervals, interval, &v) < 0)
		return gerr_set(err, EINVAL,
				"sharing.timeSlicingConfig.interval: unknown time-slice interval \"%s\" (want Default, "
				"Short, Medium or Long)",
				interval);
	s->interval = interval ? (enum dra_interval)v : DRA_TS_DEFAULT;
	return parse_mps(mps, s, err);
}

int dra_gpuconfig_parse(const json_t *params, const struct dra_gates *g, struct dra_sharing *ret, struct gerr *err)
{
	static const char *const fields[] = {"apiVersion", "kind", "sharing", NULL};
	struct dra_sharing s = {.thread_pct = -1, .pinned = -1};
	const char *api = NULL, *kind = NULL;
	int k, r;

	if (!json_is_object(params))
		return gerr_set(err, EINVAL, "parameters: want an object with apiVersion and kind");
	if ((r = get_str(params, "apiVersion", "", &api, err)) < 0 || (r = get_str(params, "kind", "", &kind, err)) < 0)
		return r;
	if (!api || !kind)
		return gerr_set(err, EINVAL,
				"parameters: apiVersion and kind are required (%s, GpuConfig or MigDeviceConfig)",
				DRA_CONFIG_API_VERSION);
	if (!streq(api, DRA_CONFIG_API_VERSION))
		return gerr_set(err, EINVAL, "apiVersion \"%s\" is not served: want %s", api, DRA_CONFIG_API_VERSION);
	if (enum_from_name(kinds, kind, &k) < 0) {
		for (size_t i = 0; i < ELEMENTSOF(other_kinds); i++)
			if (streq(kind, other_kinds[i]))
				return gerr_set(
				    err, EOPNOTSUPP,
				    "kind %s is not served by gpulet (GPU passthrough and ComputeDomains are "
				    "not implemented): use GpuConfig or MigDeviceConfig",
				    kind);
		return gerr_set(err, EINVAL, "unknown kind \"%s\" of %s: want GpuConfig or MigDeviceConfig", kind,
				DRA_CONFIG_API_VERSION);
	}
	s.kind = (enum dra_cfg_kind)k;
	if ((r = only_fields(params, kind, fields, err)) < 0 ||
	    (r = parse_sharing(json_object_get(params, "sharing"), g, &s, err)) < 0) {
		dra_sharing_clear(&s);
		return r;
	}
	*ret = s;
	return 0;
}

/* upstream's uuidSet.Normalize(): the key is a UUID of the group, else an index into it */
static int key_index(const char *key, const char *const *uuids, size_t n, size_t *ret)
{
	char *end;
	long v;

	for (size_t i = 0; i < n; i++)
		if (streq(uuids[i], key)) {
			*ret = i;
			return 0;
		}
	errno = 0;
	v = strtol(key, &end, 10);
	if (!*key || *end || errno || v < 0 || (size_t)v >= n)
		return -EINVAL;
	*ret = (size_t)v;
	return 0;
}

int dra_mps_pinned_mib(const struct dra_sharing *s, const char *const *uuids, size_t n, uint64_t *ret_mib,
		       struct gerr *err)
{
	/* limit.Megabyte(): value / 1024 / 1024 "M", refused when that is 0 ("value set too low") */
	if (s->pinned >= 0 && s->pinned / 1024 / 1024 <= 0)
		return gerr_set(
		    err, EINVAL,
		    "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: invalid limit: default value set too "
		    "low: %lld bytes (at least 1Mi)",
		    (long long)s->pinned);
	for (size_t i = 0; i < n; i++)
		ret_mib[i] = s->pinned >= 0 ? (uint64_t)(s->pinned / 1024 / 1024) : 0;
	for (size_t k = 0; k < s->n_per_dev; k++) {
		size_t i;

		if (key_index(s->per_dev[k].key, uuids, n, &i) < 0)
			return gerr_set(
			    err, EINVAL,
			    "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit: invalid device: \"%s\" is "
			    "neither the UUID of one of this request's %zu devices nor an index below %zu",
			    s->per_dev[k].key, n, n);
		if (s->per_dev[k].bytes / 1024 / 1024 <= 0)
			return gerr_set(
			    err, EINVAL,
			    "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit.%s: invalid limit: value set "
			    "too low (at least 1Mi)",
			    s->per_dev[k].key);
		ret_mib[i] = (uint64_t)(s->per_dev[k].bytes / 1024 / 1024);
	}
	return 0;
}
