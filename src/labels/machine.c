/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What GFD learns from the host rather than NVML: the DMI product name (gpu.machine), the PCI
 * class of each GPU (gpu.mode) and the vGPU vendor capability in PCI config space (vgpu.*).
 * Every path is read under --root. Rules: docs/reference/gfd-labels.md "Machine", "gpu.mode", "vGPU".
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labels/labels.h"
#include "util/fileio.h"

#define PCI_DEVICES      "/sys/bus/pci/devices"
#define PCI_VENDOR_NV    "0x10de"
#define PCI_CONFIG_MAX   4096
#define PCI_CLASS_VGA    0x030000u /* GFD: graphics */
#define PCI_CLASS_3D     0x030200u /* GFD: compute */
#define MACHINE_FILE_MAX 4096

/* PCI config space offsets (PCI Local Bus spec): status, capability pointer, capability fields. */
#define PCI_STATUS          0x06
#define PCI_STATUS_CAP_LIST 0x10
#define PCI_CAP_PTR         0x34
#define PCI_CAP_ID_VENDOR   0x09
#define PCI_CONFIG_FULL     256 /* GFD wants the whole standard space (a privileged read) */
/* NVIDIA's vGPU vendor capability: "VF" at bytes 3-4, records from byte 5, record 0 = host driver. */
#define VGPU_RECORDS   5
#define VGPU_FIELD_LEN 10

/* Copy n bytes, then trim NULs at both ends (Go strings.Trim(s, "\x00")). */
static void nul_trimmed(const uint8_t *p, size_t n, char *out, size_t size)
{
	size_t a = 0, z = n, o = 0;

	while (a < z && p[a] == 0)
		a++;
	while (z > a && p[z - 1] == 0)
		z--;
	for (size_t i = a; i < z && o + 1 < size; i++)
		out[o++] = isprint(p[i]) ? (char)p[i] : '_';
	out[o] = '\0';
}

int labels_vgpu_parse(const uint8_t *cfg, size_t len, char *version, size_t vsize, char *branch, size_t bsize,
		      struct gerr *err)
{
	bool visited[256] = {false};
	const uint8_t *cap = NULL;
	size_t cap_len = 0, pos;
	unsigned at;

	if (len < PCI_CONFIG_FULL)
		return gerr_set(err, EINVAL,
				"PCI config space is %zu bytes, not the full 256: read it with privilege (GFD runs "
				"privileged for the vGPU labels)",
				len);
	if (!(cfg[PCI_STATUS] & PCI_STATUS_CAP_LIST))
		return 0;
	for (at = cfg[PCI_CAP_PTR]; at != 0 && !visited[at]; at = cfg[at + 1]) {
		visited[at] = true;
		if (at + 2 >= len || cfg[at] == 0xff)
			break; /* chain broken */
		if (cfg[at] == PCI_CAP_ID_VENDOR) {
			cap = cfg + at;
			cap_len = cfg[at + 2];
			break;
		}
	}
	/* the signature is read only where it lies inside the space: a capability at its very end may lack it */
	if (!cap || cap_len < 5 || cap + 5 > cfg + len || cap[3] != 'V' || cap[4] != 'F')
		return 0;
	if (cap + cap_len > cfg + len)
		return gerr_set(err, EINVAL, "vGPU capability of %zu bytes runs past the config space", cap_len);
	/* walk the records (id, length, data) to record 0, the host driver version and branch */
	for (pos = VGPU_RECORDS; pos < cap_len && cap[pos] != 0;) {
		if (pos + 1 >= cap_len || cap[pos + 1] == 0)
			return gerr_set(err, EINVAL, "vGPU capability record at %zu is truncated", pos);
		pos += cap[pos + 1];
	}
	if (pos >= cap_len || cap[pos] != 0 || pos + 2 + 2 * VGPU_FIELD_LEN > cap_len)
		return gerr_set(err, EINVAL, "vGPU capability has no host driver version record");
	nul_trimmed(cap + pos + 2, VGPU_FIELD_LEN, version, vsize);
	nul_trimmed(cap + pos + 2 + VGPU_FIELD_LEN, VGPU_FIELD_LEN, branch, bsize);
	return 1;
}

static int read_pci_attr(const char *root, const char *dev, const char *attr, char *buf, size_t size)
{
	_cleanup_free_ char *rel = NULL, *path = NULL;

	if (asprintf(&rel, PCI_DEVICES "/%s/%s", dev, attr) < 0)
		return -ENOMEM;
	path = root_path(root, rel);
	if (!path)
		return -ENOMEM;
	return read_line_file(path, buf, size);
}

/* gpu.mode: every GPU's class must be readable and the same; VGA = graphics, 3D = compute. */
static void gpu_mode(const char *root, const struct node *n, struct labels_host *h)
{
	unsigned long first = 0;
	bool any = false;

	snprintf(h->gpu_mode, sizeof(h->gpu_mode), "unknown");
	for (size_t i = 0; i < n->n_gpus; i++) {
		const struct node_gpu *g = &n->gpus[i];
		char dev[32], vendor[32], class[32], *end;
		unsigned long c;

		if (g->lost || !g->name[0])
			continue;
		node_pci_sysfs_id(g->pci_bus_id, dev, sizeof(dev));
		if (!g->pci_bus_id[0] || read_pci_attr(root, dev, "vendor", vendor, sizeof(vendor)) < 0 ||
		    strcasecmp(vendor, PCI_VENDOR_NV) != 0 ||
		    read_pci_attr(root, dev, "class", class, sizeof(class)) < 0)
			return;
		c = strtoul(class, &end, 0);
		if (end == class || *end)
			return;
		if (any && c != first)
			return; /* GFD: GPUs of different classes */
		first = c;
		any = true;
	}
	if (any && first == PCI_CLASS_VGA)
		snprintf(h->gpu_mode, sizeof(h->gpu_mode), "graphics");
	else if (any && first == PCI_CLASS_3D)
		snprintf(h->gpu_mode, sizeof(h->gpu_mode), "compute");
}

/*
 * The config space of dev came back short: without CAP_SYS_ADMIN Linux gives the first 64 bytes, the
 * header alone, and every capability (the vGPU one included) lies past it. NVML says what the function
 * is instead: a GPU in VGPU virtualization mode is a vGPU (its host driver's version stays unknown), any
 * other mode is not. A display-class function NVML does not list, or a GPU whose mode NVML does not give,
 * cannot be decided: the scan fails, as GFD's does on a short read (docs/reference/gfd-labels.md "vGPU").
 */
static int vgpu_unprivileged(const struct node *n, const char *dev, const char *class, size_t len,
			     struct labels_host *h)
{
	for (size_t i = 0; i < n->n_gpus; i++) {
		char id[32];

		node_pci_sysfs_id(n->gpus[i].pci_bus_id, id, sizeof(id));
		if (!n->gpus[i].pci_bus_id[0] || strcasecmp(id, dev) != 0)
			continue;
		if (n->gpus[i].virt_mode < 0)
			break;
		if (n->gpus[i].virt_mode != NVML_GPU_VIRTUALIZATION_MODE_VGPU)
			return 0;
		h->vgpu_host_unknown = true;
		snprintf(h->vgpu_note, sizeof(h->vgpu_note),
			 "%s is a vGPU (NVML) but its PCI config space reads %zu bytes, not 256: the host driver's "
			 "version and branch need CAP_SYS_ADMIN (chart value gfd.vgpuConfigSpace)",
			 dev, len);
		return 1;
	}
	if (strncasecmp(class, "0x03", 4) != 0)
		return 0; /* not a display function (the GPU's audio, say): never a vGPU */
	snprintf(h->vgpu_note, sizeof(h->vgpu_note),
		 "%s: the PCI config space reads %zu bytes, not 256, and NVML gives no virtualization mode for it: "
		 "no vgpu labels; give the labeller CAP_SYS_ADMIN (chart value gfd.vgpuConfigSpace)",
		 dev, len);
	return -EACCES;
}

/* One PCI function: 1 vGPU, 0 not NVIDIA or not a vGPU, <0 the scan fails (as GFD's does). */
static int vgpu_device(const char *root, const struct node *n, const char *dev, struct labels_host *h)
{
	_cleanup_free_ char *rel = NULL, *path = NULL, *cfg = NULL;
	char vendor[32], class[32];
	size_t len = 0;
	int r;

	if (read_pci_attr(root, dev, "vendor", vendor, sizeof(vendor)) < 0)
		return -EIO;
	if (strcasecmp(vendor, PCI_VENDOR_NV) != 0)
		return 0;
	if (read_pci_attr(root, dev, "class", class, sizeof(class)) < 0)
		return -EIO;
	if (asprintf(&rel, PCI_DEVICES "/%s/config", dev) < 0)
		return -ENOMEM;
	path = root_path(root, rel);
	if (!path || read_file(path, PCI_CONFIG_MAX, &cfg, &len, NULL) < 0)
		return -EIO;
	r = len < PCI_CONFIG_FULL ? vgpu_unprivileged(n, dev, class, len, h)
				  : labels_vgpu_parse((const uint8_t *)cfg, len, h->vgpu_host_driver_version,
						      sizeof(h->vgpu_host_driver_version), h->vgpu_host_driver_branch,
						      sizeof(h->vgpu_host_driver_branch), NULL);
	if (r > 0)
		h->n_vgpu++;
	return r;
}

/* vGPU: every NVIDIA function under sys/bus/pci/devices, in name order; any unreadable one fails the scan. */
static void vgpu_scan(const char *root, const struct node *node, struct labels_host *h)
{
	_cleanup_free_ char *dir = root_path(root, PCI_DEVICES);
	struct dirent **names = NULL;
	int n = dir ? scandir(dir, &names, NULL, alphasort) : -1;
	bool ok = n >= 0;

	for (int i = 0; i < n; i++) {
		if (ok && names[i]->d_name[0] != '.' && vgpu_device(root, node, names[i]->d_name, h) < 0)
			ok = false;
		free(names[i]);
	}
	free(names);
	h->vgpu_known = ok;
	if (!ok)
		h->n_vgpu = 0;
}

void labels_read_host(const char *root, const struct node *n, const char *machine_file, struct labels_host *ret)
{
	_cleanup_free_ char *path = NULL;

	memset(ret, 0, sizeof(*ret));
	if (machine_file && machine_file[0]) {
		path = root_path(root, machine_file);
		if (path && read_file(path, MACHINE_FILE_MAX, &ret->machine, NULL, NULL) < 0)
			ret->machine = NULL;
	}
	gpu_mode(root, n, ret);
	vgpu_scan(root, n, ret);
}

void labels_host_clear(struct labels_host *h)
{
	free(h->machine);
	h->machine = NULL;
}
