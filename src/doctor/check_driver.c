/* SPDX-License-Identifier: Apache-2.0 */
/* Links 1–2: the kernel driver is loaded and its device nodes exist with usable permissions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "doctor/runtime_find.h"
#include "util/fileio.h"

#define FIX_DRIVER                                                                           \
	"modprobe nvidia && nvidia-smi; if the module is not installed, install the driver " \
	"(e.g. apt-get install nvidia-driver-550-server) or let the GPU Operator manage it (driver.enabled=true)"

/*
 * "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ..." and the open module's
 * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build ...":
 * the first token of the first line that looks like N.N[.N].
 */
static bool parse_driver_version(const char *text, char *buf, size_t size)
{
	const char *p = strstr(text, "NVRM version:");
	const char *eol;

	if (!p)
		return false;
	eol = strchr(p, '\n');
	if (!eol)
		eol = p + strlen(p);
	while (p < eol) {
		size_t n = strcspn(p, " \t\n");
		size_t digits = strspn(p, "0123456789.");

		if (n && digits == n && p[0] != '.' && memchr(p, '.', n) && n < size) {
			memcpy(buf, p, n);
			buf[n] = '\0';
			return true;
		}
		p += n ? n : 1;
	}
	return false;
}

/*
 * WSL2 has no NVIDIA kernel module in the Linux guest: the Windows driver serves CUDA through /dev/dxg,
 * and WSL mounts the user-space libraries under /usr/lib/wsl/lib (docs/reference/doctor-classes.md §9).
 */
static bool wsl2(struct doctor_ctx *c)
{
	static const char *const files[] = {"/dev/dxg", "/usr/lib/wsl/lib/libnvidia-ml.so.1"};
	struct doctor_finding *f;

	for (size_t k = 0; k < ELEMENTSOF(files); k++) {
		_cleanup_free_ char *p = doctor_path(c, files[k]);

		if (!p || access(p, F_OK) != 0)
			return false;
	}
	c->driver_loaded = c->wsl = true;
	f = doctor_report(c, "driver.ok", DOCTOR_OK, LINK_DRIVER, NULL,
			  "WSL2: the Windows host's NVIDIA driver serves the GPUs through /dev/dxg");
	doctor_evidence(f,
			"/dev/dxg and /usr/lib/wsl/lib/libnvidia-ml.so.1 exist; no NVIDIA kernel module in the guest "
			"(none is needed)");
	return true;
}

int doctor_check_driver(struct doctor_ctx *c)
{
	_cleanup_free_ char *vpath = doctor_path(c, "/proc/driver/nvidia/version");
	_cleanup_free_ char *mod = doctor_path(c, "/sys/module/nvidia");
	_cleanup_free_ char *text = NULL;
	struct gerr err = {0};
	struct doctor_finding *f;
	struct stat st;
	int r;

	if (!vpath || !mod)
		return -ENOMEM;
	r = read_file(vpath, 1 << 16, &text, NULL, &err);
	if (r == -ENOENT && wsl2(c))
		return 0;
	if (r == -ENOENT) {
		bool module = stat(mod, &st) == 0;

		f = doctor_driver_why_not_loaded(c);
		if (f) {
			doctor_evidence(f, "%s does not exist: the module is not loaded",
					"/proc/driver/nvidia/version");
			return 0;
		}
		f = doctor_report(c, "driver.not-loaded", DOCTOR_FAIL, LINK_DRIVER, FIX_DRIVER,
				  "the NVIDIA kernel driver is not loaded: no GPU can work on this node, and every "
				  "later symptom (no NVML, no device plugin, Insufficient nvidia.com/gpu) follows");
		doctor_evidence(f, "%s does not exist", "/proc/driver/nvidia/version");
		doctor_evidence(f, module ? "/sys/module/nvidia exists but the driver did not initialise (see the "
					    "kernel log: dmesg | grep NVRM)"
					  : "/sys/module/nvidia does not exist: the nvidia module is not loaded");
		return 0;
	}
	if (r < 0 || !parse_driver_version(text, c->driver_version, sizeof(c->driver_version))) {
		f = doctor_report(
		    c, "driver.version-unreadable", DOCTOR_FAIL, LINK_DRIVER,
		    "cat /proc/driver/nvidia/version; if it is garbled or empty the module is half-loaded: "
		    "rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && modprobe nvidia, or reboot",
		    "the driver version cannot be read, so nothing can be checked against it");
		doctor_evidence(f, "%s",
				r < 0 ? err.msg
				      : "/proc/driver/nvidia/version has no \"NVRM version:\" line "
					"with a version number");
		if (text && r >= 0)
			doctor_evidence(f, "first line: %.*s", (int)strcspn(text, "\n"), text);
		return 0;
	}
	c->driver_loaded = true;
	doctor_report(c, "driver.ok", DOCTOR_OK, LINK_DRIVER, NULL, "NVIDIA driver %s is loaded", c->driver_version);
	return 0;
}

static int devnodes(struct doctor_ctx *c);

/* Minors of the GPUs the driver knows, from /proc/driver/nvidia/gpus/<pci>/information ("Device Minor:"). */
static size_t driver_gpu_minors(const struct doctor_ctx *c, int *minors, char (*pci)[32], size_t max)
{
	_cleanup_free_ char *dir = doctor_path(c, "/proc/driver/nvidia/gpus");
	char names[64][256];
	size_t n_names = doctor_dir_names(c, "/proc/driver/nvidia/gpus", NULL, names, ELEMENTSOF(names));
	size_t n = 0;

	for (size_t k = 0; dir && k < n_names && n < max; k++) {
		_cleanup_free_ char *p = NULL, *text = NULL;
		const char *m;

		if (asprintf(&p, "%s/%s/information", dir, names[k]) < 0)
			continue;
		if (read_file(p, 1 << 16, &text, NULL, NULL) < 0 || !(m = strstr(text, "Device Minor:")))
			continue;
		minors[n] = atoi(m + strlen("Device Minor:"));
		snprintf(pci[n], sizeof(pci[n]), "%s", names[k]);
		n++;
	}
	return n;
}

static void mode_string(mode_t m, char *buf)
{
	static const char rwx[] = "rwxrwxrwx";

	buf[0] = S_ISCHR(m) ? 'c' : S_ISREG(m) ? '-' : '?';
	for (int k = 0; k < 9; k++)
		buf[k + 1] = (m & (1u << (8 - k))) ? rwx[k] : '-';
	buf[10] = '\0';
}

/* A GPU pod in --pods that runs as a non-root user: then 0660 device nodes break it (docs/reference/field-guide.md
 * §4.2). */
static const char *nonroot_gpu_pod(const struct doctor_ctx *c)
{
	size_t i;
	json_t *pod;

	json_array_foreach (c->pods, i, pod) {
		const json_t *spec = json_object_get(pod, "spec");
		const json_t *psc = json_object_get(spec, "securityContext");
		json_t *uid = json_object_get(psc, "runAsUser");
		size_t k;
		json_t *ctr;

		if (!doctor_pod_requests_gpu(pod) || doctor_pod_is_terminating(pod))
			continue;
		json_array_foreach (json_object_get(spec, "containers"), k, ctr) {
			json_t *cu = json_object_get(json_object_get(ctr, "securityContext"), "runAsUser");

			if ((cu && json_integer_value(cu) != 0) || (!cu && uid && json_integer_value(uid) != 0))
				return json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
		}
	}
	return NULL;
}

/* May uid:gid do perm (4 read, 2 write, 1 exec, or'ed) on a file of this owner and mode: owner bits if it
 * owns it, else group bits if its group does, else the other bits; uid 0 may all but exec without any x bit. */
bool doctor_user_may(const struct stat *st, unsigned uid, unsigned gid, unsigned perm)
{
	mode_t m = st->st_mode;

	if (uid == 0)
		return !(perm & 1) || (m & 0111);
	if (st->st_uid == uid)
		return ((m >> 6) & perm) == perm;
	if (st->st_gid == gid)
		return ((m >> 3) & perm) == perm;
	return (m & perm) == perm;
}

/*
 * --runtime-user: a rootless runtime (containerd/CRI-O run by a user, docs/reference/container-runtimes.md
 * §6) opens the device nodes as that user; nodes it cannot open fail every GPU container whatever the
 * pod's user. With a root runtime the mode matters only for non-root containers.
 */
static void rootless_evidence(struct doctor_ctx *c, struct doctor_finding *perm, const char *name)
{
	doctor_evidence(perm, "%s: the runtime runs as uid %u gid %u (--runtime-user) and cannot open it", name,
			c->o->runtime_uid, c->o->runtime_gid);
	if (perm->severity != DOCTOR_FAIL) {
		perm->severity = DOCTOR_FAIL;
		c->failed_links |= L(LINK_DEVNODE);
	}
}

int doctor_check_devnodes(struct doctor_ctx *c)
{
	if (c->wsl) {
		doctor_skip(c, "WSL2: GPUs go through /dev/dxg, there are no /dev/nvidia* nodes");
		return 0;
	}
	return devnodes(c);
}

static int devnodes(struct doctor_ctx *c)
{
	/* /dev/nvidiactl and /dev/nvidia-uvm are needed by every CUDA process (nvidia-container-cli list) */
	static const char *const control[] = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
	int minors[64];
	char pci[64][32];
	size_t n_gpus = driver_gpu_minors(c, minors, pci, ELEMENTSOF(minors));
	struct doctor_finding *missing = NULL, *perm = NULL;
	const char *nonroot = nonroot_gpu_pod(c);

	for (size_t k = 0; k < ELEMENTSOF(control) + n_gpus; k++) {
		char name[64];
		_cleanup_free_ char *p = NULL;
		struct stat st;
		char ms[12];
		bool rt_ok;

		if (k < ELEMENTSOF(control))
			snprintf(name, sizeof(name), "%s", control[k]);
		else
			snprintf(name, sizeof(name), "/dev/nvidia%d", minors[k - ELEMENTSOF(control)]);
		p = doctor_path(c, name);
		if (!p)
			return -ENOMEM;
		if (stat(p, &st) < 0) {
			if (!missing)
				missing = doctor_report(
				    c, "devnode.missing", DOCTOR_FAIL, LINK_DEVNODE,
				    "nvidia-ctk system create-device-nodes --control-devices --load-kernel-modules "
				    "(or nvidia-modprobe -u -c=0 for /dev/nvidia-uvm and /dev/nvidia0); "
				    "udev does not create them by itself",
				    "NVIDIA device nodes are missing: containers get no GPU and CUDA fails even where "
				    "the driver is loaded");
			if (k < ELEMENTSOF(control))
				doctor_evidence(missing, "%s does not exist", name);
			else
				doctor_evidence(missing, "%s does not exist (GPU %s, Device Minor %d)", name,
						pci[k - ELEMENTSOF(control)], minors[k - ELEMENTSOF(control)]);
			continue;
		}
		rt_ok = doctor_user_may(&st, c->o->runtime_uid, c->o->runtime_gid, 6);
		if ((st.st_mode & 0006) == 0006 && rt_ok)
			continue;
		mode_string(st.st_mode, ms);
		if (!perm)
			perm = doctor_report(
			    c, "devnode.permissions", nonroot ? DOCTOR_FAIL : DOCTOR_WARN, LINK_DEVNODE,
			    "options nvidia NVreg_DeviceFileMode=0666 in /etc/modprobe.d/nvidia.conf and reload the "
			    "module (or chmod 0666 /dev/nvidia*), or give the pod the device group in "
			    "securityContext.supplementalGroups; a rootless runtime's user needs them read-write too",
			    "NVIDIA device nodes are not world read/writable: a container running as non-root cannot "
			    "open them and nvidia-smi says \"No devices were found\"");
		doctor_evidence(perm, "%s %s uid=%u gid=%u", ms, name, (unsigned)st.st_uid, (unsigned)st.st_gid);
		if (!rt_ok)
			rootless_evidence(c, perm, name);
	}
	if (perm && nonroot)
		doctor_evidence(perm, "pod %s requests a GPU and runs as non-root", nonroot);
	if (!missing && !n_gpus) {
		struct doctor_finding *f =
		    doctor_report(c, "devnode.no-gpus", DOCTOR_WARN, LINK_DEVNODE,
				  "lspci -nn | grep -i nvidia; check that the GPU is not bound to "
				  "vfio-pci and is not excluded (NVreg_ExcludedGpus)",
				  "the driver is loaded but lists no GPU");
		doctor_evidence(f, "/proc/driver/nvidia/gpus/ is empty or missing");
	}
	return 0;
}
