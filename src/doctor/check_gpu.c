/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Link 3: NVML loads, and the GPUs are healthy (kernel-log XIDs, ECC double-bit errors, GPUs
 * fallen off the bus). An unhealthy GPU is why Allocatable is smaller than Capacity (docs/reference/field-guide.md
 * §4.1).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/cudatable.h"
#include "doctor/doctor.h"
#include "util/fileio.h"
#include "nvml/node.h"
#include "nvml/nvml.h"
#include "nvml/xid.h" /* the health module's XID table and kernel-log parser */

#define FIX_FALLEN                                                                                                  \
	"drain the node (kubectl drain NODE --ignore-daemonsets) and cold-reboot it; nvidia-smi -r cannot reset a " \
	"GPU that fell off the bus. If it recurs check power, cooling and the PCIe slot (XID 79)"
#define FIX_DBE                                                                                                \
	"drain the GPU's workloads, then reset it (nvidia-smi -r -i <index>) or reboot; if double-bit errors " \
	"recur the GPU needs service (XID 48)"

/* Held dpkg packages of the driver ("Status: hold ok installed"): a reboot does not move them. */
static void held_packages(const struct doctor_ctx *c, struct doctor_finding *f)
{
	_cleanup_free_ char *p = doctor_path(c, "/var/lib/dpkg/status"), *text = NULL;

	if (!p || read_file(p, 64u << 20, &text, NULL, NULL) < 0)
		return;
	for (const char *rec = text; rec && *rec;) {
		const char *end = strstr(rec, "\n\n");
		size_t len = end ? (size_t)(end - rec) : strlen(rec);
		int l = !strncmp(rec, "Package: ", 9) ? (int)strcspn(rec + 9, "\n") : 0;

		if (l && memmem(rec, len, "\nStatus: hold ", 14) && memmem(rec + 9, (size_t)l, "nvidia", 6))
			doctor_evidence(f, "dpkg: %.*s is on hold (apt-mark showhold): upgrades skip it", l, rec + 9);
		rec = end ? end + 2 : NULL;
	}
}

/*
 * The loaded kernel module and the user-space driver (libnvidia-ml) differ. Which side moves
 * (docs/reference/field-guide.md §4.4): user space newer = an upgrade waiting for the new module,
 * a reboot (or module reload) loads it; module newer = user space was not upgraded (held or pinned
 * packages, a partial upgrade), and no reboot fixes that.
 */
static void version_skew(struct doctor_ctx *c, const char *module, const char *user)
{
	bool user_newer = version_cmp(user, module) > 0;
	char fix[768];
	struct doctor_finding *f;

	if (user_newer)
		snprintf(fix, sizeof(fix),
			 "load the %s module: drain the node and reboot (or rmmod nvidia_uvm nvidia_drm nvidia_modeset "
			 "nvidia && modprobe nvidia); if no %s module is built for the running kernel (dkms status), "
			 "install it first",
			 user, user);
	else
		snprintf(fix, sizeof(fix),
			 "upgrade the user-space driver to %s (the libnvidia-compute/nvidia-utils packages of that "
			 "version; apt-mark unhold them first): a reboot keeps the %s module and does not fix this",
			 module, module);
	f = doctor_report(c, "nvml.version-mismatch", DOCTOR_FAIL, LINK_NVML, fix,
			  "the kernel module is %s and libnvidia-ml.so is %s: %s", module, user,
			  user_newer ? "the driver was upgraded but the old module still runs"
				     : "the user-space driver is older than the loaded module");
	doctor_evidence(f, "/proc/driver/nvidia/version: %s (kernel module)", module);
	doctor_evidence(f, "NVML reports driver %s (user space)", user);
	held_packages(c, f);
}

int doctor_check_nvml(struct doctor_ctx *c)
{
	struct doctor_finding *f;
	int r = doctor_need_nvml(c);

	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		f = doctor_report(
		    c, "nvml.load-failed", DOCTOR_FAIL, LINK_NVML,
		    "ldconfig -p | grep libnvidia-ml; the user-space driver (libnvidia-ml.so.1) must be "
		    "installed and match the kernel module version; point gpulet at it with --nvml-library",
		    "NVML cannot be used: the device plugin cannot start or sees no GPU, so the node "
		    "advertises no nvidia.com/gpu (Insufficient nvidia.com/gpu)");
		doctor_evidence(f, "%s", c->nvml_error);
		if (strcasestr(c->nvml_error, "mismatch"))
			doctor_evidence(f,
					"driver/library version mismatch: the kernel module is %s; reboot after a "
					"driver upgrade or reinstall the matching user-space package",
					c->driver_version);
		return 0;
	}
	(void)doctor_report(c, "nvml.ok", DOCTOR_OK, LINK_NVML, NULL, "NVML %s: %zu GPU(s), driver %s",
			    c->node->nvml_version, c->node->n_gpus, c->node->driver_version);
	if (c->driver_version[0] && c->node->driver_version[0] && !streq(c->driver_version, c->node->driver_version))
		version_skew(c, c->driver_version, c->node->driver_version);
	return 0;
}

/* ---- kernel log ---- */

struct xid_seen {
	unsigned xid;
	char pci[32];
	unsigned count;
	char text[160];
};

/* Read the kernel log: --kernel-log, <root>/var/log/kern.log, or /dev/kmsg when looking at this host. */
static int read_kernel_log(const struct doctor_ctx *c, char **ret, char *src, size_t size)
{
	_cleanup_free_ char *kern = NULL;
	struct gerr err = {0};
	int fd;

	if (c->o->kernel_log) {
		snprintf(src, size, "%s", c->o->kernel_log);
		return read_file(c->o->kernel_log, 64u << 20, ret, NULL, &err);
	}
	kern = doctor_path(c, "/var/log/kern.log");
	if (!kern)
		return -ENOMEM;
	if (access(kern, R_OK) == 0) {
		snprintf(src, size, "%s", kern);
		return read_file(kern, 64u << 20, ret, NULL, &err);
	}
	if (c->o->root && *c->o->root && !streq(c->o->root, "/"))
		return -ENOENT;
	/* /dev/kmsg: one record per read(); EAGAIN at the end of the buffer */
	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	{
		size_t cap = 1 << 16, len = 0;
		char *buf = malloc(cap);

		while (buf) {
			ssize_t n;

			if (cap - len < 8192) {
				char *nb = cap < (64u << 20) ? grow_alloc(buf, &cap, 1, 1 << 16) : NULL;

				if (!nb)
					break;
				buf = nb;
			}
			n = read(fd, buf + len, cap - len - 1);
			if (n < 0 && errno == EPIPE)
				continue; /* record overwritten while reading: go on */
			if (n <= 0)
				break;
			len += (size_t)n;
		}
		close(fd);
		if (!buf)
			return -ENOMEM;
		buf[len] = '\0';
		*ret = buf;
	}
	snprintf(src, size, "/dev/kmsg");
	return 0;
}

static void add_seen(struct xid_seen *seen, size_t *n, size_t max, const struct xid_kmsg *x)
{
	for (size_t k = 0; k < *n; k++)
		if (seen[k].xid == x->xid && streq(seen[k].pci, x->pci_text)) {
			seen[k].count++;
			return;
		}
	if (*n == max)
		return;
	seen[*n].xid = x->xid;
	seen[*n].count = 1;
	snprintf(seen[*n].pci, sizeof(seen[*n].pci), "%s", x->pci_text);
	snprintf(seen[*n].text, sizeof(seen[*n].text), "%s", x->text);
	(*n)++;
}

/* ids per XID class; 48 = double-bit ECC, 79 = fallen off the bus (docs/reference/monitoring-doctor.md A7) */
static const struct {
	unsigned xid;
	const char *id;
	const char *fix;
} xid_ids[] = {
    {79, "gpu.fallen-off-bus", FIX_FALLEN},
    {48, "gpu.ecc-dbe", FIX_DBE},
};

int doctor_check_kernel_log(struct doctor_ctx *c)
{
	_cleanup_free_ char *text = NULL;
	struct xid_kmsg_parser p = {0};
	struct xid_policy pol;
	struct xid_seen seen[64];
	size_t n_seen = 0;
	char src[4096];
	char *line, *save = NULL;
	int r;

	r = read_kernel_log(c, &text, src, sizeof(src));
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		doctor_report(c, "kernel-log.ok", DOCTOR_OK, LINK_GPU, NULL,
			      "no kernel log to read (give one with --kernel-log FILE)");
		return 0;
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct xid_kmsg x;

		if (xid_kmsg_parse_line(&p, line, &x) == 1)
			add_seen(seen, &n_seen, ELEMENTSOF(seen), &x);
	}
	xid_policy_default(&pol);
	for (size_t k = 0; k < n_seen; k++) {
		const struct xid_info *info = xid_lookup(seen[k].xid);
		const char *id = "gpu.unhealthy-xid";
		const char *fix =
		    "drain the GPU, reset it (nvidia-smi -r -i <index>) or reboot the node; the device plugin "
		    "re-advertises it once healthy";
		struct doctor_finding *f = NULL;

		if (!xid_policy_is_critical(&pol, seen[k].xid))
			continue; /* application errors (13, 31, 43, 45, 68, 109): the GPU is fine */
		for (size_t i = 0; i < ELEMENTSOF(xid_ids); i++)
			if (xid_ids[i].xid == seen[k].xid) {
				id = xid_ids[i].id;
				fix = xid_ids[i].fix;
			}
		f = doctor_report_once(
		    c, id, DOCTOR_FAIL, LINK_GPU, fix,
		    "the kernel log has critical XIDs: the device plugin marks these GPUs unhealthy, "
		    "so Allocatable < Capacity and multi-GPU pods stay Pending");
		doctor_evidence(f, "%s: Xid %u (%s, %s) on %s, %u time(s): %s", src, seen[k].xid,
				info ? info->name : "unknown", info ? xid_severity_name(info->severity) : "?",
				seen[k].pci, seen[k].count, seen[k].text);
	}
	return 0;
}

/* ---- NVML per-GPU health ---- */

int doctor_check_gpu_health(struct doctor_ctx *c)
{
	struct doctor_finding *lost = NULL, *dbe = NULL;

	if (doctor_need_nvml(c) < 0)
		return 0; /* reported by the nvml check */
	for (size_t k = 0; k < c->node->n_gpus; k++) {
		const struct node_gpu *g = &c->node->gpus[k];
		nvmlDevice_t dev;
		unsigned long long count = 0;

		if (g->lost) {
			if (!lost)
				lost = doctor_report_once(
				    c, "gpu.fallen-off-bus", DOCTOR_FAIL, LINK_GPU, FIX_FALLEN,
				    "a GPU is lost (fell off the bus): it is unusable until the node is "
				    "rebooted, and Allocatable shrinks by one");
			doctor_evidence(lost, "NVML: GPU %u %s (%s) answers GPU_IS_LOST", g->index, g->uuid,
					g->pci_bus_id);
			continue;
		}
		if (!NVML_HAS(c->nv, device_get_handle_by_index) || !NVML_HAS(c->nv, device_get_total_ecc_errors) ||
		    c->nv->device_get_handle_by_index(g->index, &dev) != NVML_SUCCESS ||
		    c->nv->device_get_total_ecc_errors(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
						       &count) != NVML_SUCCESS ||
		    count == 0)
			continue;
		if (!dbe)
			dbe = doctor_report_once(
			    c, "gpu.ecc-dbe", DOCTOR_FAIL, LINK_GPU, FIX_DBE,
			    "uncorrectable (double-bit) ECC errors: the device plugin marks the GPU "
			    "unhealthy, nvidia-smi still lists it (docs/reference/field-guide.md §4.1)");
		doctor_evidence(dbe, "NVML: GPU %u %s has %llu volatile uncorrected ECC error(s)", g->index, g->uuid,
				count);
	}
	return 0;
}
