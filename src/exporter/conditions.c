/* SPDX-License-Identifier: Apache-2.0 */
/* GPU health conditions read from NVML's current state; see conditions.h. */
#include <string.h>

#include "exporter/exporter.h"
#include "exporter/conditions.h"

static nvmlReturn_t read_dbe_volatile(const struct nvml *nv, nvmlDevice_t h, bool *ret)
{
	unsigned long long n = 0;
	nvmlReturn_t r =
	    nv->device_get_total_ecc_errors
		? nv->device_get_total_ecc_errors(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &n)
		: NVML_ERROR_NOT_SUPPORTED;
	*ret = n > 0;
	return r;
}

/* arg 0: pending, 1: failure */
static nvmlReturn_t read_remap(const struct nvml *nv, nvmlDevice_t h, int arg, bool *ret)
{
	unsigned corr = 0, unc = 0, pending = 0, failure = 0;
	nvmlReturn_t r = nv->device_get_remapped_rows ? nv->device_get_remapped_rows(h, &corr, &unc, &pending, &failure)
						      : NVML_ERROR_NOT_SUPPORTED;
	*ret = (arg ? failure : pending) != 0;
	return r;
}

static nvmlReturn_t read_remap_pending(const struct nvml *nv, nvmlDevice_t h, bool *ret)
{
	return read_remap(nv, h, 0, ret);
}

static nvmlReturn_t read_remap_failure(const struct nvml *nv, nvmlDevice_t h, bool *ret)
{
	return read_remap(nv, h, 1, ret);
}

/*
 * The conditions, each one NVML query of state the driver keeps until the GPU is reset. Volatile
 * ECC counters restart at 0 on a driver reload or GPU reset; NVML reports a pending remap until the
 * reset that applies it, and a remap failure for good (docs/reference/alerts.md, "Health").
 */
static const struct {
	const char *name;
	nvmlReturn_t (*read)(const struct nvml *nv, nvmlDevice_t h, bool *ret);
} exp_health_conds[EXP_HEALTH_COND_COUNT] = {
    [EXP_HEALTH_DBE_VOLATILE] = {"dbe_volatile", read_dbe_volatile},
    [EXP_HEALTH_ROW_REMAP_PENDING] = {"row_remap_pending", read_remap_pending},
    [EXP_HEALTH_ROW_REMAP_FAILURE] = {"row_remap_failure", read_remap_failure},
};

const char *exp_health_cond_name(enum exp_health_cond c)
{
	return (unsigned)c < EXP_HEALTH_COND_COUNT ? exp_health_conds[c].name : "unknown";
}

/* The two facts DCGM's DRIVER and MEM health watches read besides the conditions (health_status.c). */
static void read_watch_facts(const struct nvml *nv, nvmlDevice_t h, struct exp_health *out)
{
	nvmlFieldValue_t f = {.fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION};
	nvmlEnableState_t pending = 0;

	out->recovery = out->retired_pending = -1;
	if (nv->device_get_field_values && nv->device_get_field_values(h, 1, &f) == NVML_SUCCESS &&
	    f.nvmlReturn == NVML_SUCCESS)
		out->recovery = (int)f.value.uiVal;
	if (nv->device_get_retired_pages_pending_status &&
	    nv->device_get_retired_pages_pending_status(h, &pending) == NVML_SUCCESS)
		out->retired_pending = pending != 0;
}

struct exp_health exp_health_read(const struct nvml *nv, nvmlDevice_t h)
{
	struct exp_health out = {0};

	read_watch_facts(nv, h, &out);
	for (unsigned i = 0; i < EXP_HEALTH_COND_COUNT; i++) {
		bool bad = false;
		if (exp_health_conds[i].read(nv, h, &bad) != NVML_SUCCESS)
			continue;
		out.known |= 1u << i;
		if (bad)
			out.bad |= 1u << i;
	}
	return out;
}

void exp_health_update(struct exp_gpu *eg, const struct nvml *nv, nvmlDevice_t h)
{
	struct exp_health now = exp_health_read(nv, h);
	pthread_mutex_lock(&eg->lock);
	eg->st.health = now;
	pthread_mutex_unlock(&eg->lock);
}

bool exp_health_ok(const struct exp_gpu_state *st)
{
	return !st->lost && !st->xid_unhealthy && !st->dbe && !st->health.bad;
}

void exp_health_render(struct strbuf *b, struct exporter *e)
{
	bool header = false;
	for (size_t g = 0; e && g < e->n_gpus; g++) {
		struct exp_gpu *eg = &e->gpus[g];
		pthread_mutex_lock(&eg->lock);
		struct exp_health hs = eg->st.health;
		pthread_mutex_unlock(&eg->lock);
		for (unsigned i = 0; i < EXP_HEALTH_COND_COUNT; i++) {
			if (!(hs.known & (1u << i)))
				continue;
			if (!header) {
				strbuf_printf(b,
					      "# HELP gpulet_gpu_health_condition 1 while NVML reports the condition "
					      "on this GPU now (it holds until a GPU reset).\n"
					      "# TYPE gpulet_gpu_health_condition gauge\n");
				header = true;
			}
			strbuf_printf(b, "gpulet_gpu_health_condition{%s%s,condition=\"%s\"} %d\n",
				      e->devs[eg->first_dev].labels, e->hostname_labels, exp_health_conds[i].name,
				      (hs.bad >> i) & 1 ? 1 : 0);
		}
	}
}
