/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The version ledger of the field guide (§7: "driver, toolkit, plugin, Operator, CUDA, K8s — keep a
 * ledger, check the matrix before upgrading"): what each component is, where that was read, and
 * verdicts from the tables in cudatable.c and cdi.c, each with its source.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdi/cdi.h"
#include "doctor/cudatable.h"
#include "doctor/doctor.h"
#include "util/fileio.h"
#include "nvml/node.h"

static bool live(const struct doctor_ctx *c)
{
	return streq(doctor_root(c->o), "/");
}

bool doctor_scan_version(const char *text, char *buf, size_t size)
{
	for (const char *p = text; *p; p++) {
		if ((p == text || p[-1] == ' ' || p[-1] == 'v') && *p >= '0' && *p <= '9' &&
		    strspn(p, "0123456789.") > 2 && memchr(p, '.', strspn(p, "0123456789."))) {
			snprintf(buf, size, "%.*s", (int)strspn(p, "0123456789."), p);
			return true;
		}
	}
	return false;
}

/* `<tool> --version` on the live host (no shell: doctor_run_tool), first version in its output. */
static bool command_version(const char *tool, char *buf, size_t size)
{
	char *const argv[] = {(char *)tool, "--version", NULL};
	char out[2048];

	return doctor_run_tool("/", tool, argv, out, sizeof(out), 5000) >= 0 && doctor_scan_version(out, buf, size);
}

/* Image tag of a pod in --pods whose image contains needle ("k8s-device-plugin", "gpu-operator"). */
static bool pod_image_tag(const struct doctor_ctx *c, const char *needle, char *buf, size_t size)
{
	size_t i, k;
	json_t *pod, *ctr;

	json_array_foreach (c->pods, i, pod) {
		json_array_foreach (json_object_get(json_object_get(pod, "spec"), "containers"), k, ctr) {
			const char *img = json_string_value(json_object_get(ctr, "image"));
			const char *tag;

			if (img && strstr(img, needle) && (tag = strrchr(img, ':')) && !strchr(tag, '/')) {
				snprintf(buf, size, "%s", tag[1] == 'v' ? tag + 2 : tag + 1);
				return true;
			}
		}
	}
	return false;
}

static const char *node_info(const struct doctor_ctx *c, const char *key)
{
	return json_string_value(
	    json_object_get(json_object_get(json_object_get(c->node_obj, "status"), "nodeInfo"), key));
}

static json_t *component(json_t *list, const char *name, const char *version, const char *source)
{
	json_t *o = json_pack("{s:s, s:s?, s:s, s:[]}", "name", name, "version", version && *version ? version : NULL,
			      "source", source, "verdicts");

	json_array_append_new(list, o);
	return o;
}

static void verdict(json_t *comp, enum doctor_severity sev, const char *source, const char *fmt, ...) _printf_(4, 5);
static void verdict(json_t *comp, enum doctor_severity sev, const char *source, const char *fmt, ...)
{
	char text[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	json_array_append_new(
	    json_object_get(comp, "verdicts"),
	    json_pack("{s:s, s:s, s:s}", "severity", doctor_severity_name(sev), "text", text, "source", source));
}

/* containerd and CDI: 1.6 has none, 1.7 needs enable_cdi, 2.x has it on (docs/reference/cdi.md §6). */
static void containerd_verdicts(json_t *comp, const char *v)
{
	const char *rt = version_cmp(v, "1.7.13") >= 0 ? "containerd-1.7.13" : "containerd-1.7";

	if (version_cmp(v, "1.7") < 0) {
		verdict(comp, DOCTOR_WARN, "docs/reference/real-peers.md §F; docs/reference/cdi.md §6",
			"containerd %s has no CDI support (enable_cdi arrived in 1.7): GPUs only through the nvidia "
			"runtime's hook",
			v);
		return;
	}
	if (version_cmp(v, "2") < 0)
		verdict(
		    comp, DOCTOR_OK, "docs/reference/cdi.md §6 (containerd PR #9666)",
		    "containerd %s supports CDI with enable_cdi = true (off by default in 1.7); spec cdiVersion <= %s",
		    v, cdi_runtime_max_version(rt));
	else
		verdict(comp, DOCTOR_OK, "docs/reference/cdi.md §6 (containerd PR #9621)",
			"containerd %s has CDI on by default (config version 3)", v);
}

/* kubelet and the CDI devices field of Allocate (KEP-4009; docs/reference/cdi.md §5). */
static void kubelet_verdicts(json_t *comp, const char *v)
{
	const char *s = v[0] == 'v' ? v + 1 : v;

	if (version_cmp(s, "1.28") < 0)
		verdict(comp, DOCTOR_WARN, "KEP-4009, docs/reference/cdi.md §5",
			"kubelet %s does not pass CDI device names from device plugins (cdi_devices needs 1.28+); CDI "
			"only through annotations",
			v);
	else if (version_cmp(s, "1.29") < 0)
		verdict(
		    comp, DOCTOR_WARN, "KEP-4009, docs/reference/cdi.md §5",
		    "kubelet %s: CDI devices from device plugins need the DevicePluginCDIDevices feature gate (alpha)",
		    v);
	else
		verdict(comp, DOCTOR_OK, "KEP-4009, docs/reference/cdi.md §5",
			"kubelet %s passes CDI device names from device plugins (beta 1.29, GA 1.31)", v);
}

/* containerd and kubelet: --node's nodeInfo, else dpkg, else (live only) the binary's --version. */
struct daemon_row {
	const char *name;
	const char *node_field; /* status.nodeInfo.<node_field> */
	const char *prefix;     /* the nodeInfo value must start with this; stripped */
	const char *pkgs[2];    /* dpkg packages, in order */
	void (*verdicts)(json_t *comp, const char *v);
};

static const struct daemon_row daemon_rows[] = {
    {"containerd", "containerRuntimeVersion", "containerd://", {"containerd", "containerd.io"}, containerd_verdicts},
    {"kubelet", "kubeletVersion", "", {"kubelet", NULL}, kubelet_verdicts},
};

/* The version of d and where it was read into v / src; false when nothing says (v = ""). */
static bool daemon_lookup(const struct doctor_ctx *c, const struct daemon_row *d, char *v, size_t vsize, char *src,
			  size_t ssize)
{
	const char *ni = node_info(c, d->node_field);
	size_t pl = strlen(d->prefix);

	if (ni && !strncmp(ni, d->prefix, pl)) {
		snprintf(v, vsize, "%s", ni + pl);
		snprintf(src, ssize, "--node status.nodeInfo.%s", d->node_field);
	} else if (doctor_dpkg_version(c, d->pkgs[0], v, vsize) ||
		   (d->pkgs[1] && doctor_dpkg_version(c, d->pkgs[1], v, vsize))) {
		snprintf(src, ssize, "dpkg");
	} else if (live(c) && command_version(d->name, v, vsize)) {
		snprintf(src, ssize, "%s --version", d->name);
	} else {
		v[0] = '\0';
	}
	return v[0] != '\0';
}

bool doctor_kubelet_version(const struct doctor_ctx *c, char *v, size_t vsize, char *src, size_t ssize)
{
	for (size_t k = 0; k < ELEMENTSOF(daemon_rows); k++)
		if (streq(daemon_rows[k].name, "kubelet"))
			return daemon_lookup(c, &daemon_rows[k], v, vsize, src, ssize);
	return false;
}

static void daemon_version(const struct doctor_ctx *c, json_t *list, const struct daemon_row *d)
{
	char v[128], src[256];
	json_t *comp;

	daemon_lookup(c, d, v, sizeof(v), src, sizeof(src));
	comp = component(list, d->name, v, v[0] ? src : "not found");
	if (v[0])
		d->verdicts(comp, v);
}

json_t *versions_ledger(struct doctor_ctx *c)
{
	json_t *list = json_array(), *comp;
	char v[128], src[256];
	int cuda = 0;

	if (!list)
		return NULL;
	/* driver */
	doctor_check_driver(c);
	comp = component(list, "driver", c->driver_version, "/proc/driver/nvidia/version");
	if (!c->driver_loaded)
		verdict(comp, DOCTOR_FAIL, "field guide §4.4", "the NVIDIA driver is not loaded");
	/* CUDA driver API */
	if (doctor_need_nvml(c) > 0 && c->node->cuda_driver_version) {
		cuda = c->node->cuda_driver_version;
		snprintf(src, sizeof(src), "NVML nvmlSystemGetCudaDriverVersion");
	} else if ((cuda = cuda_max_for_driver(c->driver_version))) {
		snprintf(src, sizeof(src), "CUDA release notes Table 3 for driver %s", c->driver_version);
	}
	cuda_version_format(cuda, v, sizeof(v));
	comp = component(list, "cuda", cuda ? v : NULL, cuda ? src : "unknown");
	if (cuda) {
		const struct cuda_compat_row *cr = cuda_compat_for(cuda / 1000);

		verdict(comp, DOCTOR_OK, "docs/reference/cuda-driver-table.md",
			"images built for CUDA <= %s run; newer %d.x images only through minor-version compatibility "
			"(driver >= %s), newer majors not at all",
			v, cuda / 1000, cr ? cr->min_driver : "?");
	}
	/* toolkit */
	if (doctor_toolkit_version(c, v, sizeof(v), src, sizeof(src)) >= 0) {
		const struct toolkit_row *row = toolkit_too_old(c->driver_version, v);

		comp = component(list, "toolkit", v, src);
		if (row)
			verdict(comp, DOCTOR_FAIL, row->source, "nvidia-container-toolkit %s < %s for driver %s: %s", v,
				row->toolkit_min, c->driver_version, row->what);
		else if (c->driver_version[0])
			verdict(comp, DOCTOR_OK, "cudatable.c toolkit_rows", "new enough for driver %s",
				c->driver_version);
	} else {
		component(list, "toolkit", NULL, "not found (dpkg, nvidia-ctk)");
	}
	/* device plugin */
	if (pod_image_tag(c, "k8s-device-plugin", v, sizeof(v)))
		component(list, "plugin", v, "--pods: nvidia k8s-device-plugin image tag");
	else
		component(list, "plugin", GPULET_VERSION, "gpulet (this binary)");
	/* operator */
	if (pod_image_tag(c, "gpu-operator", v, sizeof(v)))
		component(list, "operator", v, "--pods: gpu-operator image tag");
	for (size_t k = 0; k < ELEMENTSOF(daemon_rows); k++)
		daemon_version(c, list, &daemon_rows[k]);
	return list;
}
