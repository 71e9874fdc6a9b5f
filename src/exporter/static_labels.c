/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Static label fields: a collectors file listing one of the fields below with type `label` gets a
 * label of that name on every series of the GPU (and of its MIG instances), as dcgm-exporter's
 * toMetric; the value is what DCGM stores for the field (a string, or an int64 printed "%d"), read
 * the way DCGM's cache manager reads it (docs/reference/dcgm-exporter.md §8). Read once when the
 * exporter starts: the values do not change while the driver is loaded.
 */
#include <stdio.h>
#include <string.h>

#include "exporter/exporter.h"
#include "util/log.h"

/* One field's value for GPU h into buf (NUL-terminated); anything but NVML_SUCCESS: no label. */
typedef nvmlReturn_t (*label_getter)(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf,
				     unsigned len);

/* An NVML call filling a string: NULL (the driver lacks it) is FUNCTION_NOT_FOUND. */
static nvmlReturn_t string_of(nvmlReturn_t (*fn)(nvmlDevice_t, char *, unsigned), nvmlDevice_t h, char *buf,
			      unsigned len)
{
	return fn ? fn(h, buf, len) : NVML_ERROR_FUNCTION_NOT_FOUND;
}

/* An int64 field: DCGM's value printed as dcgm-exporter prints it ("%d"). */
static nvmlReturn_t int_of(nvmlReturn_t r, long long v, char *buf, unsigned len)
{
	if (r == NVML_SUCCESS)
		snprintf(buf, len, "%lld", v);
	return r;
}

static nvmlReturn_t serial(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf, unsigned len)
{
	return string_of(nv->device_get_serial, h, buf, len);
}

static nvmlReturn_t vbios(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf, unsigned len)
{
	return string_of(nv->device_get_vbios_version, h, buf, len);
}

static nvmlReturn_t inforom_image(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf,
				  unsigned len)
{
	return string_of(nv->device_get_inforom_image_version, h, buf, len);
}

static nvmlReturn_t name(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf, unsigned len)
{
	return string_of(nv->device_get_name, h, buf, len);
}

static nvmlReturn_t inforom(const struct nvml *nv, nvmlDevice_t h, nvmlInforomObject_t obj, char *buf, unsigned len)
{
	return nv->device_get_inforom_version ? nv->device_get_inforom_version(h, obj, buf, len)
					      : NVML_ERROR_FUNCTION_NOT_FOUND;
}

static nvmlReturn_t inforom_oem(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf,
				unsigned len)
{
	return inforom(nv, h, NVML_INFOROM_OEM, buf, len);
}

static nvmlReturn_t inforom_ecc(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf,
				unsigned len)
{
	return inforom(nv, h, NVML_INFOROM_ECC, buf, len);
}

static nvmlReturn_t inforom_power(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf,
				  unsigned len)
{
	return inforom(nv, h, NVML_INFOROM_POWER, buf, len);
}

static nvmlReturn_t nvml_version(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf,
				 unsigned len)
{
	return nv->system_get_nvml_version ? nv->system_get_nvml_version(buf, len) : NVML_ERROR_FUNCTION_NOT_FOUND;
}

static nvmlReturn_t uuid(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf, unsigned len)
{
	snprintf(buf, len, "%s", eg->uuid);
	return NVML_SUCCESS;
}

static nvmlReturn_t pci_busid(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf, unsigned len)
{
	nvmlPciInfo_t pci;
	nvmlReturn_t r = nv->device_get_pci_info ? nv->device_get_pci_info(h, &pci) : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r == NVML_SUCCESS)
		snprintf(buf, len, "%.*s", (int)sizeof(pci.busId), pci.busId);
	return r;
}

static nvmlReturn_t minor_number(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf,
				 unsigned len)
{
	unsigned minor = 0;
	nvmlReturn_t r = nv->device_get_minor_number(h, &minor);
	return int_of(r, minor, buf, len);
}

static nvmlReturn_t cuda_driver(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf,
				unsigned len)
{
	int v = 0;
	nvmlReturn_t r =
	    nv->system_get_cuda_driver_version ? nv->system_get_cuda_driver_version(&v) : NVML_ERROR_FUNCTION_NOT_FOUND;
	return int_of(r, v, buf, len);
}

/* DCGM renumbers NVML's compute modes: EXCLUSIVE_THREAD is gone, so PROHIBITED is 1, EXCLUSIVE_PROCESS 2. */
static nvmlReturn_t compute_mode(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf,
				 unsigned len)
{
	nvmlComputeMode_t m = NVML_COMPUTEMODE_DEFAULT;
	nvmlReturn_t r =
	    nv->device_get_compute_mode ? nv->device_get_compute_mode(h, &m) : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (m == NVML_COMPUTEMODE_PROHIBITED)
		m = NVML_COMPUTEMODE_EXCLUSIVE_THREAD;
	else if (m == NVML_COMPUTEMODE_EXCLUSIVE_PROCESS)
		m = NVML_COMPUTEMODE_PROHIBITED;
	return int_of(r, m, buf, len);
}

static nvmlReturn_t persistence_mode(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf,
				     unsigned len)
{
	nvmlEnableState_t m = 0;
	nvmlReturn_t r =
	    nv->device_get_persistence_mode ? nv->device_get_persistence_mode(h, &m) : NVML_ERROR_FUNCTION_NOT_FOUND;
	return int_of(r, m, buf, len);
}

static nvmlReturn_t virtual_mode(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf,
				 unsigned len)
{
	nvmlGpuVirtualizationMode_t m = 0;
	nvmlReturn_t r = nv->device_get_virtualization_mode ? nv->device_get_virtualization_mode(h, &m)
							    : NVML_ERROR_FUNCTION_NOT_FOUND;
	return int_of(r, m, buf, len);
}

/* DCGM's brand strings (its cache manager's table; past it "Unknown") */
static const char *const brands[] = {
    [NVML_BRAND_UNKNOWN] = "Unknown",
    [NVML_BRAND_QUADRO] = "Quadro",
    [NVML_BRAND_TESLA] = "Tesla",
    [NVML_BRAND_NVS] = "NVS",
    [NVML_BRAND_GRID] = "Grid",
    [NVML_BRAND_GEFORCE] = "GeForce",
    [NVML_BRAND_TITAN] = "Titan",
    [NVML_BRAND_NVIDIA_VAPPS] = "NVIDIA Virtual Applications",
    [NVML_BRAND_NVIDIA_VPC] = "NVIDIA Virtual PC",
    [NVML_BRAND_NVIDIA_VCS] = "NVIDIA Virtual Compute Server",
    [NVML_BRAND_NVIDIA_VWS] = "NVIDIA RTX Virtual Workstation",
    [NVML_BRAND_NVIDIA_CLOUD_GAMING] = "NVIDIA vGaming",
    [NVML_BRAND_QUADRO_RTX] = "Quadro RTX",
    [NVML_BRAND_NVIDIA_RTX] = "NVIDIA RTX",
    [NVML_BRAND_NVIDIA] = "NVIDIA",
    [NVML_BRAND_GEFORCE_RTX] = "GeForce RTX",
    [NVML_BRAND_TITAN_RTX] = "Titan RTX",
};

static nvmlReturn_t brand(const struct nvml *nv, nvmlDevice_t h, const struct exp_gpu *eg, char *buf, unsigned len)
{
	nvmlBrandType_t b = NVML_BRAND_UNKNOWN;
	nvmlReturn_t r = nv->device_get_brand ? nv->device_get_brand(h, &b) : NVML_ERROR_FUNCTION_NOT_FOUND;
	if (r == NVML_SUCCESS)
		snprintf(buf, len, "%s", b >= 0 && (size_t)b < ELEMENTSOF(brands) ? brands[b] : "Unknown");
	return r;
}

static const struct {
	const char *name;
	label_getter get;
} label_fields[] = {
    {"DCGM_FI_DEV_SERIAL", serial},
    {"DCGM_FI_DEV_VBIOS_VERSION", vbios},
    {"DCGM_FI_DEV_INFOROM_IMAGE_VER", inforom_image},
    {"DCGM_FI_NVML_VERSION", nvml_version},
    {"DCGM_FI_DEV_BRAND", brand},
    {"DCGM_FI_DEV_NAME", name},
    {"DCGM_FI_DEV_UUID", uuid},
    {"DCGM_FI_DEV_MINOR_NUMBER", minor_number},
    {"DCGM_FI_DEV_PCI_BUSID", pci_busid},
    {"DCGM_FI_DEV_OEM_INFOROM_VER", inforom_oem},
    {"DCGM_FI_DEV_ECC_INFOROM_VER", inforom_ecc},
    {"DCGM_FI_DEV_POWER_INFOROM_VER", inforom_power},
    {"DCGM_FI_CUDA_DRIVER_VERSION", cuda_driver},
    {"DCGM_FI_DEV_COMPUTE_MODE", compute_mode},
    {"DCGM_FI_DEV_PERSISTENCE_MODE", persistence_mode},
    {"DCGM_FI_DEV_VIRTUAL_MODE", virtual_mode},
};
_Static_assert(ELEMENTSOF(label_fields) <= 32, "exporter.label_fields is a 32-bit mask");

int exp_label_field_index(const char *field)
{
	for (size_t k = 0; k < ELEMENTSOF(label_fields); k++)
		if (streq(label_fields[k].name, field))
			return (int)k;
	return -1;
}

/* Append ,NAME="value" to every device of GPU slot g; a label that does not fit is left out and counted. */
static size_t append(struct exporter *e, const struct exp_gpu *eg, const char *field, const char *value)
{
	size_t left_out = 0;
	char esc[256], label[320];
	prom_escape(value, esc, sizeof(esc));
	int n = snprintf(label, sizeof(label), ",%s=\"%s\"", field, esc);
	for (size_t d = eg->first_dev; d < eg->first_dev + eg->n_devs; d++) {
		size_t len = strlen(e->devs[d].labels);
		if (n > 0 && (size_t)n < sizeof(label) && len + (size_t)n < sizeof(e->devs[d].labels))
			memcpy(e->devs[d].labels + len, label, (size_t)n + 1);
		else {
			log_debug("a static label field's value is too long to serve; label left out",
				  "field=%s uuid=%s", field, eg->uuid);
			left_out++;
		}
	}
	return left_out;
}

size_t exp_static_labels_fill(struct exporter *e)
{
	const struct nvml *nv = e->nv;
	size_t left_out = 0;
	for (size_t g = 0; e->label_fields && g < e->n_gpus; g++) {
		struct exp_gpu *eg = &e->gpus[g];
		nvmlDevice_t h;
		if (eg->st.lost || !eg->uuid[0] || !nv->device_get_handle_by_uuid ||
		    nv->device_get_handle_by_uuid(eg->uuid, &h) != NVML_SUCCESS)
			continue;
		for (size_t k = 0; k < ELEMENTSOF(label_fields); k++) {
			char buf[96] = "";
			if ((e->label_fields & (1u << k)) &&
			    label_fields[k].get(nv, h, eg, buf, sizeof(buf)) == NVML_SUCCESS && buf[0])
				left_out += append(e, eg, label_fields[k].name, buf);
		}
	}
	return left_out;
}
