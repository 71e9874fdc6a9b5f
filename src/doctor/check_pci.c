/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPUs the node has on its PCI bus but the driver does not (docs/reference/doctor-classes.md §2): each
 * NVIDIA display device in sysfs is compared with /proc/driver/nvidia/gpus (the driver probed it) and
 * NVML (it works), and the first reason that fits says why one is missing — bound to vfio-pci for
 * passthrough, another driver, no BAR window in a VM, the driver could not initialise it (GSP firmware),
 * or it fell off the bus. A node that lost GPUs advertises fewer: pods asking for what the hardware has
 * stay Pending, and that is the node's fault, not the pod's (check_sched.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/cluster.h"
#include "doctor/doctor.h"
#include "doctor/klog.h"
#include "doctor/pci.h"
#include "nvml/node.h"
#include "util/fileio.h"

#define MAX_PCI_GPUS 64

struct lost_gpu {
	const struct pci_gpu *g;
	const char *klog; /* the node's kernel log, NULL none */
	char line[512];   /* the kernel-log line that says why */
};

/* A kernel-log line about this GPU that holds needle: "0000:07:00.0" as the PCI core and dev_printk write
 * it, or "PCI:0000:07:00" as NVRM's Xid lines do. */
static bool klog_about(struct lost_gpu *l, const char *needle)
{
	char short_id[32];

	if (!l->klog)
		return false;
	if (klog_find(l->klog, l->g->bdf, needle, l->line, sizeof(l->line)))
		return true;
	snprintf(short_id, sizeof(short_id), "PCI:%.12s", l->g->bdf);
	return klog_find(l->klog, short_id, needle, l->line, sizeof(l->line)) != NULL;
}

static bool is_vfio(struct doctor_ctx *c, struct lost_gpu *l)
{
	(void)c;
	return streq(l->g->driver, "vfio-pci") || streq(l->g->override, "vfio-pci");
}

static bool other_driver(struct doctor_ctx *c, struct lost_gpu *l)
{
	(void)c;
	return l->g->driver[0] && !streq(l->g->driver, "nvidia");
}

/* "pci 0000:02:00.0: BAR 1: no space for [mem size 0x800000000 64bit pref]" (kernel drivers/pci/setup-res.c),
 * "NVRM: BAR1 is 0M @ 0x0 (PCI:0000:14:00.0)" (the driver's probe) */
static bool bar_unassigned(struct doctor_ctx *c, struct lost_gpu *l)
{
	(void)c;
	return klog_about(l, "BAR 1: no space for") || klog_about(l, "BAR 1: failed to assign") ||
	       klog_about(l, "BAR1 is 0M") || (!l->g->driver[0] && l->g->bar1_unset);
}

/* /lib/firmware/nvidia/<version>/gsp_*.bin: what the driver asks the kernel to load
 * (kernel-open/common/inc/nv-firmware.h) */
static bool gsp_missing(struct doctor_ctx *c, struct lost_gpu *l)
{
	static const char *const files[] = {"gsp_ga10x.bin", "gsp_tu10x.bin"};
	char rel[256];

	if (klog_about(l, "Direct firmware load for nvidia/") ||
	    (l->klog && klog_find(l->klog, "Direct firmware load for nvidia/", "gsp", l->line, sizeof(l->line))))
		return true;
	if (!c->driver_version[0] || !klog_about(l, "RmInitAdapter failed"))
		return false;
	for (size_t k = 0; k < ELEMENTSOF(files); k++) {
		_cleanup_free_ char *p = NULL;

		snprintf(rel, sizeof(rel), "/lib/firmware/nvidia/%s/%s", c->driver_version, files[k]);
		p = doctor_path(c, rel);
		if (p && access(p, F_OK) != 0)
			return true;
	}
	return false;
}

static bool init_failed(struct doctor_ctx *c, struct lost_gpu *l)
{
	(void)c;
	return l->g->in_proc || klog_about(l, "RmInitAdapter failed") || klog_about(l, "rm_init_adapter failed");
}

static bool fell_off(struct doctor_ctx *c, struct lost_gpu *l)
{
	(void)c;
	return klog_about(l, "fallen off the bus");
}

static bool unknown(struct doctor_ctx *c, struct lost_gpu *l)
{
	(void)c;
	(void)l;
	return true;
}

/* First row that matches explains a GPU; the last one always does. */
static const struct lost_reason {
	const char *id;
	bool (*match)(struct doctor_ctx *c, struct lost_gpu *l);
	const char *summary;
	const char *fix;
} reasons[] = {
    {"gpu.bound-to-vfio", is_vfio,
     "GPUs on the PCI bus are bound to vfio-pci (passthrough), not to the nvidia driver: the node advertises "
     "fewer GPUs than it has",
     "give them back to the nvidia driver: driverctl unset-override <bdf> (or remove the vfio-pci.ids= kernel "
     "argument / 'options vfio-pci ids=' in /etc/modprobe.d and regenerate the initramfs), then echo <bdf> > "
     "/sys/bus/pci/drivers/vfio-pci/unbind && echo <bdf> > /sys/bus/pci/drivers/nvidia/bind, or reboot; if the "
     "passthrough is meant (KubeVirt), label the node nvidia.com/gpu.workload.config=vm-passthrough"},
    {"gpu.bound-to-other-driver", other_driver,
     "GPUs on the PCI bus are bound to another driver than nvidia: the node advertises fewer GPUs than it has",
     "blacklist that driver (for nouveau: blacklist nouveau and options nouveau modeset=0 in "
     "/etc/modprobe.d/blacklist-nouveau.conf, update-initramfs -u or dracut -f) and reboot"},
    {"gpu.bar-unassigned", bar_unassigned,
     "the kernel found no address window for a GPU's BAR1 (its framebuffer aperture): the driver cannot use "
     "the GPU; common in VMs whose 64-bit MMIO space is smaller than the GPUs need",
     "give the GPUs a large enough 64-bit MMIO window, then reboot: in a VM raise the 64-bit MMIO size "
     "(VMware pciPassthru.use64bitMMIO=TRUE and pciPassthru.64bitMMIOSizeGB at least twice the GPUs' total "
     "memory rounded up to a power of two; QEMU/OVMF a larger 64-bit PCI hole), on bare metal enable Above 4G "
     "Decoding (and Resizable BAR) in the firmware setup"},
    {"driver.gsp-firmware-missing", gsp_missing,
     "the driver cannot load its GSP firmware for this version: it probes the GPU but RmInitAdapter fails, and "
     "nvidia-smi lists fewer GPUs (or none)",
     "install the firmware of the running driver version (the nvidia-firmware-<branch>-<version> package on "
     "Ubuntu, the driver's kmod/firmware package elsewhere; it puts gsp_*.bin in /lib/firmware/nvidia/<version>/), "
     "then reload the driver or reboot"},
    {"gpu.fallen-off-bus", fell_off,
     "a GPU fell off the bus: it is unusable until the node is rebooted, and Allocatable shrinks", doctor_fix_fallen},
    {"gpu.init-failed", init_failed,
     "the nvidia driver probed a GPU but could not initialise it (RmInitAdapter failed): NVML and nvidia-smi "
     "do not list it, and the node advertises fewer GPUs",
     "reset the GPU (nvidia-smi -r -i <index>, with nothing using it) or reboot; if it recurs, run "
     "nvidia-bug-report.sh and check the GPU's power and seating"},
    {"gpu.not-probed", unknown,
     "a GPU on the PCI bus has no driver at all: the nvidia module did not take it (excluded, or its probe "
     "failed) and the node advertises fewer GPUs",
     "dmesg | grep -e NVRM -e <bdf> for the probe error; check NVreg_ExcludedGpus in /etc/modprobe.d and "
     "that the driver supports this GPU"},
};

/* NVML lists a GPU at this sysfs bus id, or at none because it answers GPU_IS_LOST (then id unknown). */
static bool in_nvml(const struct doctor_ctx *c, const char *bdf)
{
	for (size_t k = 0; k < c->node->n_gpus; k++) {
		char id[32];

		node_pci_sysfs_id(c->node->gpus[k].pci_bus_id, id, sizeof(id));
		if (streq(id, bdf))
			return true;
	}
	return false;
}

/* The admin kept this GPU from the driver on purpose: "GPU Excluded: Yes" (NVreg_ExcludedGpus), or the
 * node is labelled for VM passthrough (the GPU Operator's sandbox workloads). */
static bool meant(struct doctor_ctx *c, const struct pci_gpu *g)
{
	const char *workload = cluster_node_label(c, "nvidia.com/gpu.workload.config");
	_cleanup_free_ char *p = NULL, *text = NULL;
	const char *line;
	char rel[128];

	if (workload && (streq(workload, "vm-passthrough") || streq(workload, "vm-vgpu")))
		return true;
	snprintf(rel, sizeof(rel), "/proc/driver/nvidia/gpus/%s/information", g->bdf);
	p = doctor_path(c, rel);
	if (!p || read_file(p, 1 << 16, &text, NULL, NULL) < 0 || !(line = strstr(text, "GPU Excluded:")))
		return false;
	line += strlen("GPU Excluded:");
	line += strspn(line, " \t");
	return !strncmp(line, "Yes", 3);
}

/* vfio-pci ids in modprobe.d, the kernel command line, a driverctl override: what binds it at boot. */
static void vfio_sources(struct doctor_ctx *c, struct doctor_finding *f, const struct pci_gpu *g)
{
	char names[32][256], rel[PATH_MAX];
	size_t n = doctor_dir_names(c, "/etc/driverctl.d", NULL, names, ELEMENTSOF(names));
	_cleanup_free_ char *cmd = doctor_path(c, "/proc/cmdline"), *text = NULL;

	for (size_t k = 0; k < n; k++)
		if (strstr(names[k], g->bdf))
			doctor_evidence(f, "/etc/driverctl.d/%s: driverctl keeps %s on vfio-pci at every boot",
					names[k], g->bdf);
	if (cmd && read_file(cmd, 1 << 16, &text, NULL, NULL) >= 0 && strstr(text, "vfio-pci.ids="))
		doctor_evidence(f, "/proc/cmdline: %.*s", (int)strcspn(strstr(text, "vfio-pci.ids="), " \n"),
				strstr(text, "vfio-pci.ids="));
	n = doctor_dir_names(c, "/etc/modprobe.d", NULL, names, ELEMENTSOF(names));
	for (size_t k = 0; k < n; k++) {
		_cleanup_free_ char *p = NULL, *conf = NULL;
		const char *hit;

		snprintf(rel, sizeof(rel), "/etc/modprobe.d/%s", names[k]);
		p = doctor_path(c, rel);
		if (p && read_file(p, 1 << 20, &conf, NULL, NULL) >= 0 && (hit = strstr(conf, "vfio-pci ids=")))
			doctor_evidence(f, "%s: options %.*s", rel, (int)strcspn(hit, "\n"), hit);
	}
}

static int report(struct doctor_ctx *c, const struct lost_reason *r, struct lost_gpu *l, bool nvml)
{
	struct doctor_finding *f = doctor_report_once(c, r->id, DOCTOR_FAIL, LINK_GPU, r->fix, "%s", r->summary);

	doctor_evidence(f, "/sys/bus/pci/devices/%s: NVIDIA GPU 10de:%04x, driver %s%s%s; %s", l->g->bdf, l->g->device,
			l->g->driver[0] ? l->g->driver : "none", l->g->override[0] ? ", driver_override " : "",
			l->g->override,
			l->g->in_proc ? "in /proc/driver/nvidia/gpus" : "not in /proc/driver/nvidia/gpus");
	if (nvml)
		doctor_evidence(f, "NVML does not list %s", l->g->bdf);
	if (l->line[0])
		doctor_evidence(f, "%s: %s", c->klog_src, l->line);
	if (streq(r->id, "gpu.bound-to-vfio"))
		vfio_sources(c, f, l->g);
	if (streq(r->id, "driver.gsp-firmware-missing"))
		doctor_evidence(f, "/lib/firmware/nvidia/%s/: gsp_ga10x.bin or gsp_tu10x.bin missing",
				c->driver_version);
	return 0;
}

int doctor_check_pci(struct doctor_ctx *c)
{
	struct pci_gpu gpus[MAX_PCI_GPUS];
	size_t n = doctor_pci_gpus(c, gpus, ELEMENTSOF(gpus));
	bool nvml = doctor_need_nvml(c) > 0;
	const char *klog = NULL;
	int r;

	if (n > ELEMENTSOF(gpus))
		n = ELEMENTSOF(gpus);
	if (!n) {
		doctor_skip(c,
			    "no NVIDIA GPU in /sys/bus/pci/devices (paravirtual GPUs, WSL2, or a root without sys/)");
		return 0;
	}
	for (size_t k = 0; k < n; k++) {
		struct lost_gpu l = {.g = &gpus[k]};

		/* the driver has it: NVML lists it, or without NVML the driver probed it */
		if ((nvml ? in_nvml(c, gpus[k].bdf) : gpus[k].in_proc) || meant(c, &gpus[k]))
			continue;
		if (nvml && gpus[k].in_proc && doctor_find(c, "gpu.fallen-off-bus"))
			continue; /* NVML lost it (GPU_IS_LOST has no bus id): gpu.fallen-off-bus says so */
		if (!l.klog) {
			r = doctor_need_klog(c, &klog, NULL);
			if (r == -ENOMEM)
				return r;
			l.klog = klog;
		}
		for (size_t i = 0; i < ELEMENTSOF(reasons); i++)
			if (reasons[i].match(c, &l)) {
				r = report(c, &reasons[i], &l, nvml);
				if (r < 0)
					return r;
				break;
			}
	}
	return 0;
}
