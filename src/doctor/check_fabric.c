/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVSwitch systems (docs/reference/doctor-classes.md §4): GPUs behind NVSwitches stay unusable until
 * the fabric manager has trained the NVLink fabric — CUDA returns error 802 "system not yet initialized"
 * in every pod — and the fabric manager refuses to start when its version is not the driver's
 * ("fabric manager NVIDIA GPU driver interface version X don't match with driver version Y"). Checked as
 * an operator would: the NVSwitch devices, the manager's socket and process, its package, unit and log,
 * and the fabric state NVML reports per GPU.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "doctor/proc.h"
#include "nvml/node.h"
#include "util/fileio.h"

#define FM_SOCKET "/run/nvidia-fabricmanager/socket"
#define FM_UNIT   "/etc/systemd/system/multi-user.target.wants/nvidia-fabricmanager.service"
#define FM_LOG    "/var/log/fabricmanager.log"

static bool nvswitch_node(const char *name)
{
	return !strncmp(name, "nvidia-nvswitch", 15) && name[15] >= '0' && name[15] <= '9';
}

/* NVSwitches the driver exposes: /dev/nvidia-nvswitch<N>, /proc/driver/nvidia-nvswitch/devices/<bdf>. */
static size_t nvswitches(const struct doctor_ctx *c)
{
	char names[64][256];
	size_t n = doctor_dir_names(c, "/dev", nvswitch_node, names, ELEMENTSOF(names));

	return n ? n : doctor_dir_names(c, "/proc/driver/nvidia-nvswitch/devices", NULL, names, ELEMENTSOF(names));
}

/* The fabric manager's dpkg package (nvidia-fabricmanager-<branch>) and its version, false when none. */
static bool fm_package(const struct doctor_ctx *c, char *pkg, size_t psize, char *ver, size_t vsize)
{
	_cleanup_free_ char *p = doctor_path(c, "/var/lib/dpkg/status"), *status = NULL;
	const char *s;

	if (!p || read_file(p, 64u << 20, &status, NULL, NULL) < 0)
		return false;
	for (s = strstr(status, "Package: nvidia-fabricmanager"); s;
	     s = strstr(s + 1, "Package: nvidia-fabricmanager")) {
		if (s != status && s[-1] != '\n')
			continue;
		snprintf(pkg, psize, "%.*s", (int)strcspn(s + 9, "\n"), s + 9);
		return doctor_dpkg_version(c, pkg, ver, vsize);
	}
	return false;
}

/* The manager's own complaint about the driver's version, from its log file. */
static bool fm_log_mismatch(const struct doctor_ctx *c, char *line, size_t size)
{
	_cleanup_free_ char *p = doctor_path(c, FM_LOG), *log = NULL;
	const char *hit, *bol;

	if (!p || read_file(p, 16u << 20, &log, NULL, NULL) < 0 || !(hit = strstr(log, "driver interface version")))
		return false;
	for (bol = hit; bol > log && bol[-1] != '\n'; bol--)
		;
	snprintf(line, size, "%.*s", (int)strcspn(bol, "\n"), bol);
	return true;
}

static bool fm_running(const struct doctor_ctx *c, char *how, size_t size)
{
	static const char *const names[] = {"nv-fabricmanager"};
	_cleanup_free_ char *sock = doctor_path(c, FM_SOCKET);
	char pid[32], cmd[256];

	if (sock && access(sock, F_OK) == 0) {
		snprintf(how, size, "%s exists", FM_SOCKET);
		return true;
	}
	if (doctor_find_process(c, names, ELEMENTSOF(names), pid, sizeof(pid), cmd, sizeof(cmd))) {
		snprintf(how, size, "/proc/%s/cmdline: %s", pid, cmd);
		return true;
	}
	return false;
}

static void not_running(struct doctor_ctx *c, size_t n_sw, const char *pkg, const char *pver)
{
	_cleanup_free_ char *unit = doctor_path(c, FM_UNIT);
	bool enabled = unit && access(unit, F_OK) == 0;
	char fix[1024];
	struct doctor_finding *f;

	if (!pver[0])
		snprintf(fix, sizeof(fix),
			 "install the fabric manager of the driver's exact version (apt-get install "
			 "nvidia-fabricmanager-<branch>=%s-1, or the GPU Operator's driver with fabric manager) and "
			 "systemctl enable --now nvidia-fabricmanager",
			 c->driver_version[0] ? c->driver_version : "<driver version>");
	else if (!enabled)
		snprintf(fix, sizeof(fix), "systemctl enable --now nvidia-fabricmanager");
	else
		snprintf(fix, sizeof(fix),
			 "systemctl restart nvidia-fabricmanager and read why it stopped: journalctl -u "
			 "nvidia-fabricmanager, %s",
			 FM_LOG);
	f = doctor_report(c, "fabric.manager-not-running", DOCTOR_FAIL, LINK_GPU, fix,
			  "the node has NVSwitches but the NVIDIA fabric manager is not running: the NVLink fabric is "
			  "not trained and CUDA fails in every pod with error 802 \"system not yet initialized\"");
	doctor_evidence(f, "%zu NVSwitch device(s) (/dev/nvidia-nvswitch*)", n_sw);
	doctor_evidence(f, "no %s and no nv-fabricmanager process under /proc", FM_SOCKET);
	if (pver[0])
		doctor_evidence(f, "dpkg: %s %s is installed; %s", pkg, pver,
				enabled ? "nvidia-fabricmanager.service is enabled" : "its service is not enabled");
	else
		doctor_evidence(f, "dpkg: no nvidia-fabricmanager package");
}

static void fabric_state(struct doctor_ctx *c)
{
	static const char *const states[] = {"not supported", "not started", "in progress", "completed"};
	struct doctor_finding *f = NULL;

	if (doctor_need_nvml(c) < 0)
		return;
	for (size_t k = 0; k < c->node->n_gpus; k++) {
		const struct node_gpu *g = &c->node->gpus[k];

		if (!g->fabric_known || g->fabric_state == NVML_GPU_FABRIC_STATE_NOT_SUPPORTED ||
		    (g->fabric_state == NVML_GPU_FABRIC_STATE_COMPLETED && g->fabric_status == NVML_SUCCESS))
			continue;
		if (!f)
			f = doctor_report(
			    c, "fabric.not-ready", DOCTOR_FAIL, LINK_GPU,
			    "journalctl -u nvidia-fabricmanager and " FM_LOG
			    " say why the fabric did not come up; systemctl restart nvidia-fabricmanager, "
			    "or reboot the node",
			    "the GPUs' NVLink fabric is not ready: CUDA fails with error 802 \"system not yet "
			    "initialized\" until it is");
		doctor_evidence(f, "NVML nvmlDeviceGetGpuFabricInfo: GPU %u %s fabric state %s%s%s", g->index, g->uuid,
				g->fabric_state < ELEMENTSOF(states) ? states[g->fabric_state] : "unknown",
				g->fabric_state == NVML_GPU_FABRIC_STATE_COMPLETED ? ", status " : "",
				g->fabric_state == NVML_GPU_FABRIC_STATE_COMPLETED
				    ? nvml_return_name((nvmlReturn_t)g->fabric_status)
				    : "");
	}
}

int doctor_check_fabric(struct doctor_ctx *c)
{
	size_t n_sw = nvswitches(c);
	char pkg[128] = "", pver[64] = "", how[600], line[512], fix[512];
	struct doctor_finding *f;
	bool have = fm_package(c, pkg, sizeof(pkg), pver, sizeof(pver)), running;

	if (!n_sw) {
		doctor_skip(c, "no NVSwitch on this node: no fabric manager needed");
		return 0;
	}
	running = fm_running(c, how, sizeof(how));
	/* its log's complaint counts while it does not run: an old line must not outlive the fix */
	if ((have && c->driver_version[0] && !streq(pver, c->driver_version)) ||
	    (!running && fm_log_mismatch(c, line, sizeof(line)))) {
		snprintf(
		    fix, sizeof(fix),
		    "install the fabric manager of the driver's exact version %s (apt-get install %s=%s-*; hold both "
		    "with apt-mark hold) and systemctl restart nvidia-fabricmanager",
		    c->driver_version[0] ? c->driver_version : "(see nvidia-smi)",
		    pkg[0] ? pkg : "nvidia-fabricmanager-<branch>",
		    c->driver_version[0] ? c->driver_version : "<version>");
		f = doctor_report(
		    c, "fabric.version-mismatch", DOCTOR_FAIL, LINK_GPU, fix,
		    "the fabric manager's version is not the driver's: it refuses to start, and CUDA fails "
		    "with error 802 \"system not yet initialized\" on this NVSwitch node");
		if (have)
			doctor_evidence(f, "dpkg: %s %s; the loaded driver is %s", pkg, pver, c->driver_version);
		if (fm_log_mismatch(c, line, sizeof(line)))
			doctor_evidence(f, "%s: %s", FM_LOG, line);
		return 0;
	}
	if (!running) {
		not_running(c, n_sw, pkg, pver);
		return 0;
	}
	fabric_state(c);
	if (!doctor_find(c, "fabric.not-ready"))
		doctor_evidence(doctor_report(c, "fabric.ok", DOCTOR_OK, LINK_GPU, NULL,
					      "%zu NVSwitch(es); the fabric manager runs", n_sw),
				"%s", how);
	return 0;
}
