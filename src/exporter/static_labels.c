/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Static label fields: a collectors file listing DCGM_FI_DEV_SERIAL, DCGM_FI_DEV_VBIOS_VERSION or
 * DCGM_FI_DEV_INFOROM_IMAGE_VER with type `label` gets a label of that name on every series of the
 * GPU (and of its MIG instances), as dcgm-exporter's toMetric (docs/reference/dcgm-exporter.md §8).
 * Read once when the exporter starts: the values do not change while the driver is loaded.
 */
#include <string.h>

#include "exporter/exporter.h"

typedef nvmlReturn_t (*string_getter)(nvmlDevice_t, char *, unsigned);

static string_getter serial(const struct nvml *nv)
{
	return nv->device_get_serial;
}

static string_getter vbios(const struct nvml *nv)
{
	return nv->device_get_vbios_version;
}

static string_getter inforom_image(const struct nvml *nv)
{
	return nv->device_get_inforom_image_version;
}

static const struct {
	const char *name;
	string_getter (*getter)(const struct nvml *nv);
} label_fields[] = {
    {"DCGM_FI_DEV_SERIAL", serial},
    {"DCGM_FI_DEV_VBIOS_VERSION", vbios},
    {"DCGM_FI_DEV_INFOROM_IMAGE_VER", inforom_image},
};
_Static_assert(ELEMENTSOF(label_fields) <= 32, "exporter.label_fields is a 32-bit mask");

int exp_label_field_index(const char *name)
{
	for (size_t k = 0; k < ELEMENTSOF(label_fields); k++)
		if (streq(label_fields[k].name, name))
			return (int)k;
	return -1;
}

/* Append ,NAME="value" to every device of GPU slot g; a label that does not fit is left out. */
static void append(struct exporter *e, const struct exp_gpu *eg, const char *name, const char *value)
{
	char esc[256], label[320];
	prom_escape(value, esc, sizeof(esc));
	int n = snprintf(label, sizeof(label), ",%s=\"%s\"", name, esc);
	if (n < 0 || (size_t)n >= sizeof(label))
		return;
	for (size_t d = eg->first_dev; d < eg->first_dev + eg->n_devs; d++) {
		size_t len = strlen(e->devs[d].labels);
		if (len + (size_t)n < sizeof(e->devs[d].labels))
			memcpy(e->devs[d].labels + len, label, (size_t)n + 1);
	}
}

void exp_static_labels_fill(struct exporter *e)
{
	const struct nvml *nv = e->nv;
	for (size_t g = 0; e->label_fields && g < e->n_gpus; g++) {
		struct exp_gpu *eg = &e->gpus[g];
		nvmlDevice_t h;
		if (eg->st.lost || !eg->uuid[0] || !nv->device_get_handle_by_uuid ||
		    nv->device_get_handle_by_uuid(eg->uuid, &h) != NVML_SUCCESS)
			continue;
		for (size_t k = 0; k < ELEMENTSOF(label_fields); k++) {
			string_getter get = label_fields[k].getter(nv);
			char buf[96] = "";
			if ((e->label_fields & (1u << k)) && get && get(h, buf, sizeof(buf)) == NVML_SUCCESS && buf[0])
				append(e, eg, label_fields[k].name, buf);
		}
	}
}
