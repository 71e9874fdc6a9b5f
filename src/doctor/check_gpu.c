/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Link 3: NVML loads, and the GPUs are healthy (kernel-log XIDs, ECC double-bit errors, GPUs
 * fallen off the bus). An unhealthy GPU is why Allocatable is smaller than Capacity (docs/reference/field-guide.md
 * §4.1).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/cudatable.h"
#include "doctor/doctor.h"
#include "doctor/klog.h"
#include "host/driver.h"
#include "util/fileio.h"
#include "nvml/node.h"
#include "nvml/nvml.h"
#include "nvml/xid.h" /* the health module's XID table and kernel-log parser */

#define FIX_FALLEN                                                                                                  \
	"drain the node (kubectl drain NODE --ignore-daemonsets) and cold-reboot it; nvidia-smi -r cannot reset a " \
	"GPU that fell off the bus. If it recurs check power, cooling and the PCIe slot (XID 79)"
const char doctor_fix_fallen[] = FIX_FALLEN;

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
static struct doctor_finding *version_skew(struct doctor_ctx *c, const char *module, const char *user)
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
	held_packages(c, f);
	return f;
}

/*
 * The user-space driver's version from the file libnvidia-ml.so.1 resolves to (libnvidia-ml.so.550.54.15),
 * in the driver's library dirs (host/ driver_lib_dirs[]) below the root and driver root. where gets the file.
 */
static bool library_version(const struct doctor_ctx *c, char *ver, size_t vsize, char *where, size_t wsize)
{
	const char *droot = doctor_driver_root(c->o)  ? doctor_driver_root(c->o)
			    : c->driver_root_found[0] ? c->driver_root_found
						      : "";

	for (size_t k = 0; k < driver_n_lib_dirs; k++) {
		char rel[PATH_MAX], link[PATH_MAX];
		_cleanup_free_ char *p = NULL;
		ssize_t n;

		snprintf(rel, sizeof(rel), "%s%s/libnvidia-ml.so.1", streq(droot, "/") ? "" : droot,
			 driver_lib_dirs[k]);
		p = doctor_path(c, rel);
		for (int hop = 0; p && hop < 4 && (n = readlink(p, link, sizeof(link) - 1)) > 0; hop++) {
			const char *base;

			link[n] = '\0';
			base = strrchr(link, '/');
			base = base ? base + 1 : link;
			if (!strncmp(base, "libnvidia-ml.so.", 16) && strchr(base + 16, '.')) {
				snprintf(ver, vsize, "%s", base + 16);
				snprintf(where, wsize, "%s -> %s", rel, link);
				return true;
			}
			if (link[0] == '/')
				break;
			free(p);
			snprintf(rel + (strrchr(rel, '/') - rel) + 1,
				 sizeof(rel) - (size_t)(strrchr(rel, '/') - rel) - 1, "%s", link);
			p = doctor_path(c, rel);
		}
	}
	return false;
}

/* NVML refused to initialise with LIB_RM_VERSION_MISMATCH: name both versions from what is on the node. */
static int rm_mismatch(struct doctor_ctx *c)
{
	char user[64] = "", where[PATH_MAX + 128] = "", line[512] = "", kv[64];
	bool file = library_version(c, user, sizeof(user), where, sizeof(where));
	const char *text;
	bool logged =
	    doctor_need_klog(c, &text, NULL) >= 0 && klog_api_mismatch(text, kv, sizeof(kv), line, sizeof(line));
	struct doctor_finding *f;

	if (!file && logged)
		snprintf(user, sizeof(user), "%s", kv);
	if (!user[0] || !c->driver_version[0] || streq(user, c->driver_version))
		return 1;
	f = version_skew(c, c->driver_version, user);
	doctor_evidence(f, "NVML: %s", c->nvml_error);
	if (file)
		doctor_evidence(f, "%s (user space %s)", where, user);
	if (line[0])
		doctor_evidence(f, "%s: %s", c->klog_src, line);
	return 0;
}

int doctor_check_nvml(struct doctor_ctx *c)
{
	struct doctor_finding *f;
	int r = doctor_need_nvml(c);

	if (r == -ENOMEM)
		return r;
	if (r == -EPROTO && rm_mismatch(c) == 0)
		return 0; /* LIB_RM_VERSION_MISMATCH: the version skew, named with both versions */
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
	f = doctor_report(c, "nvml.ok", DOCTOR_OK, LINK_NVML, NULL, "NVML %s: %zu GPU(s), driver %s",
			  c->node->nvml_version, c->node->n_gpus, c->node->driver_version);
	if (c->driver_root_found[0])
		doctor_evidence(
		    f,
		    "libnvidia-ml.so.1 found under the driver root %s (the GPU Operator's driver container, "
		    "GKE's installer or WSL2), not under /",
		    c->driver_root_found);
	if (c->driver_version[0] && c->node->driver_version[0] && !streq(c->driver_version, c->node->driver_version))
		doctor_evidence(version_skew(c, c->driver_version, c->node->driver_version),
				"NVML reports driver %s (user space)", c->node->driver_version);
	return 0;
}

/* ---- kernel log ---- */

struct xid_seen {
	unsigned xid;
	char pci[32];
	unsigned count;
	char text[160];
};

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
	struct xid_kmsg_parser p = {0};
	struct xid_policy pol;
	struct xid_seen seen[64];
	size_t n_seen = 0, len;
	const char *text, *src, *pos, *line;
	int r;

	r = doctor_need_klog(c, &text, &src);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		doctor_report(c, "kernel-log.ok", DOCTOR_OK, LINK_GPU, NULL,
			      "no kernel log to read (give one with --kernel-log FILE)");
		return 0;
	}
	for (pos = text; klog_next_line(&pos, &line, &len);) {
		char one[4096];
		struct xid_kmsg x;

		snprintf(one, sizeof(one), "%.*s", (int)len, line);
		if (xid_kmsg_parse_line(&p, one, &x) == 1)
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
