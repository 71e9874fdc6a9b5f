/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Why the NVIDIA kernel module is not loaded (docs/reference/doctor-classes.md §1), checked the way an
 * operator would by hand: which driver sysfs says owns the GPUs (nouveau), what the kernel logged when
 * modprobe ran (Secure Boot lockdown, the open module refusing a GPU without GSP), whether a module for
 * the running kernel exists at all (DKMS built none: no headers), and whether Secure Boot is on with the
 * DKMS signing key never enrolled. The first reason found replaces the bare driver.not-loaded.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "doctor/klog.h"
#include "doctor/pci.h"
#include "util/fileio.h"

#define MAX_PCI_GPUS 64
/* EFI global variable GUID (UEFI spec) and shim's MOK GUID: efivars names are <Name>-<GUID> */
#define EFI_GLOBAL "8be4df61-93ca-11d2-aa0d-00e098032b8c"
#define SHIM_GUID  "605dab50-e046-4300-abb6-3dd810dd8b23"

struct kmod_facts {
	const char *klog;  /* NULL: no kernel log */
	char release[128]; /* running kernel, /proc/sys/kernel/osrelease; "" unknown */
	struct pci_gpu gpus[MAX_PCI_GPUS];
	size_t n_gpus;
	char line[512]; /* the kernel-log line a reason found */
};

static bool log_has(struct kmod_facts *k, const char *needle, const char *also)
{
	return k->klog && klog_find(k->klog, needle, also, k->line, sizeof(k->line));
}

/* A node path, following one absolute symlink below the root (a root elsewhere must not resolve it on
 * this machine): /lib/modules/<rel>/build -> /usr/src/linux-headers-<rel>. */
static bool node_exists(const struct doctor_ctx *c, const char *path)
{
	_cleanup_free_ char *p = doctor_path(c, path), *t = NULL;
	char link[PATH_MAX];
	ssize_t n;
	struct stat st;

	if (!p || lstat(p, &st) < 0)
		return false;
	if (!S_ISLNK(st.st_mode))
		return true;
	n = readlink(p, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	if (link[0] != '/')
		return stat(p, &st) == 0;
	t = doctor_path(c, link);
	return t && stat(t, &st) == 0;
}

/* ---- nouveau ---- */

static struct doctor_finding *nouveau(struct doctor_ctx *c, struct kmod_facts *k)
{
	_cleanup_free_ char *mod = doctor_path(c, "/sys/module/nouveau");
	struct doctor_finding *f = NULL;
	char names[32][256];
	size_t n;
	bool blacklisted = false;

	for (size_t i = 0; i < k->n_gpus; i++) {
		if (!streq(k->gpus[i].driver, "nouveau"))
			continue;
		if (!f)
			f = doctor_report(
			    c, "driver.nouveau", DOCTOR_FAIL, LINK_DRIVER,
			    "blacklist nouveau (printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' > "
			    "/etc/modprobe.d/blacklist-nouveau.conf), rebuild the initramfs (update-initramfs -u, or "
			    "dracut "
			    "-f) and reboot; the GPU Operator's driver container needs the same",
			    "the open-source nouveau driver owns the GPUs, so the NVIDIA module cannot bind to them "
			    "(it "
			    "finds no GPU to probe and does not load)");
		doctor_evidence(f, "/sys/bus/pci/devices/%s/driver -> nouveau", k->gpus[i].bdf);
	}
	if (!f && mod && access(mod, F_OK) == 0 && k->n_gpus &&
	    log_has(k, "NVRM: The NVIDIA probe routine was not called", NULL))
		f = doctor_report(c, "driver.nouveau", DOCTOR_FAIL, LINK_DRIVER,
				  "blacklist nouveau in /etc/modprobe.d, rebuild the initramfs and reboot",
				  "the nouveau module is loaded and took the GPUs before the NVIDIA module");
	if (!f)
		return NULL;
	if (mod && access(mod, F_OK) == 0)
		doctor_evidence(f, "/sys/module/nouveau exists: nouveau is loaded");
	if (log_has(k, "NVRM: The NVIDIA probe routine was not called", NULL))
		doctor_evidence(f, "%s: %s", c->klog_src, k->line);
	n = doctor_dir_names(c, "/etc/modprobe.d", NULL, names, ELEMENTSOF(names));
	for (size_t i = 0; i < n && !blacklisted; i++) {
		_cleanup_free_ char *p = NULL, *conf = NULL;
		char rel[PATH_MAX];

		snprintf(rel, sizeof(rel), "/etc/modprobe.d/%s", names[i]);
		p = doctor_path(c, rel);
		if (p && read_file(p, 1 << 20, &conf, NULL, NULL) >= 0 && strstr(conf, "blacklist nouveau")) {
			blacklisted = true;
			doctor_evidence(f,
					"%s blacklists nouveau, but it is still loaded: the initramfs still carries it "
					"(rebuild it) or the node was not rebooted since",
					rel);
		}
	}
	if (!blacklisted)
		doctor_evidence(f, "no 'blacklist nouveau' in /etc/modprobe.d/*.conf");
	return f;
}

/* ---- Secure Boot ---- */

/* efivars files: 4 bytes of attributes, then the value; SecureBoot is one byte, 1 = on. */
static int secure_boot(const struct doctor_ctx *c)
{
	_cleanup_free_ char *p = doctor_path(c, "/sys/firmware/efi/efivars/SecureBoot-" EFI_GLOBAL), *v = NULL;
	size_t len = 0;

	if (!p || read_file(p, 64, &v, &len, NULL) < 0 || len < 5)
		return -1;
	return v[4] == 1;
}

/* Is the DER key (mok.pub) in MokListRT (EFI_SIGNATURE_LISTs carrying the enrolled certificates)? -1 unknown. */
static int key_enrolled(const struct doctor_ctx *c, const char *key_path)
{
	static const char *const lists[] = {"/sys/firmware/efi/mok-variables/MokListRT",
					    "/sys/firmware/efi/efivars/MokListRT-" SHIM_GUID};
	_cleanup_free_ char *kp = doctor_path(c, key_path), *key = NULL;
	size_t klen = 0;

	if (!kp || read_file(kp, 1 << 16, &key, &klen, NULL) < 0 || klen < 16)
		return -1;
	for (size_t k = 0; k < ELEMENTSOF(lists); k++) {
		_cleanup_free_ char *lp = doctor_path(c, lists[k]), *list = NULL;
		size_t llen = 0;

		if (lp && read_file(lp, 1 << 20, &list, &llen, NULL) >= 0)
			return memmem(list, llen, key, klen) != NULL;
	}
	return -1;
}

/* Where DKMS keeps the key it signs modules with (dkms ≥ 3 /var/lib/dkms/mok.pub; Ubuntu's shim-signed). */
static const char *const mok_keys[] = {"/var/lib/dkms/mok.pub", "/var/lib/shim-signed/mok/MOK.der"};

/*
 * The kernel's words when it refuses an unsigned module: lockdown (security/lockdown/lockdown.c,
 * "unsigned module loading"), module signature enforcement (kernel/module/signing.c), and modprobe's
 * own errors for EKEYREJECTED / ENOKEY.
 */
static const char *const unsigned_lines[] = {
    "unsigned module loading is restricted",
    "Loading of unsigned module is rejected",
    "Key was rejected by service",
    "Required key not available",
};

static struct doctor_finding *unsigned_module(struct doctor_ctx *c, struct kmod_facts *k)
{
	struct doctor_finding *f = NULL;
	int sb = secure_boot(c), enrolled = -1;
	const char *key = NULL;
	bool logged = false;

	for (size_t i = 0; i < ELEMENTSOF(unsigned_lines) && !logged; i++)
		logged = log_has(k, unsigned_lines[i], NULL);
	for (size_t i = 0; i < ELEMENTSOF(mok_keys) && enrolled < 0; i++) {
		enrolled = key_enrolled(c, mok_keys[i]);
		key = mok_keys[i];
	}
	if (!logged && !(sb == 1 && enrolled == 0))
		return NULL;
	f = doctor_report(
	    c, "driver.secure-boot-unsigned", DOCTOR_FAIL, LINK_DRIVER,
	    "enrol the key the module is signed with: mokutil --import /var/lib/dkms/mok.pub, reboot and "
	    "confirm it in the MOK manager on the console; or use a module signed by your distribution "
	    "(Ubuntu linux-modules-nvidia-<branch>-<flavour>), or turn Secure Boot off",
	    "Secure Boot rejects the NVIDIA module: it is not signed by a key the kernel trusts (the DKMS "
	    "key was never enrolled in MOK)");
	if (logged)
		doctor_evidence(f, "%s: %s", c->klog_src, k->line);
	if (sb == 1)
		doctor_evidence(f, "/sys/firmware/efi/efivars/SecureBoot-" EFI_GLOBAL ": Secure Boot is on");
	if (enrolled == 0)
		doctor_evidence(f, "%s is not in MokListRT: mokutil --list-enrolled does not show it", key);
	return f;
}

/* ---- the open module on a GPU without GSP ---- */

static struct doctor_finding *open_without_gsp(struct doctor_ctx *c, struct kmod_facts *k)
{
	struct doctor_finding *f;

	if (!log_has(k, "NVRM: nvidia.ko because it does not include the required GPU", NULL) &&
	    !log_has(k, "is not supported by open", NULL))
		return NULL;
	f = doctor_report(c, "driver.open-module-no-gsp", DOCTOR_FAIL, LINK_DRIVER,
			  "install the proprietary kernel module of the same driver (e.g. nvidia-driver-550-server "
			  "instead of nvidia-driver-550-server-open; the GPU Operator's driver.kernelModuleType="
			  "proprietary): GPUs before Turing have no GSP and only that module drives them",
			  "the open NVIDIA kernel module refuses these GPUs: they have no GPU System Processor (GSP), "
			  "which the open module requires (GPUs before Turing)");
	doctor_evidence(f, "%s: %s", c->klog_src, k->line);
	for (size_t i = 0; i < k->n_gpus; i++)
		if (pci_gpu_before_turing(k->gpus[i].device))
			doctor_evidence(f, "/sys/bus/pci/devices/%s: device 10de:%04x, before Turing", k->gpus[i].bdf,
					k->gpus[i].device);
	return f;
}

/* ---- no module for the running kernel ---- */

/* modules.dep (depmod's list) names nvidia.ko, nvidia.ko.xz, nvidia.ko.zst: /nvidia.ko */
static bool module_built(const struct doctor_ctx *c, const char *release, bool *have_dep)
{
	char rel[PATH_MAX];
	_cleanup_free_ char *p = NULL, *dep = NULL;

	snprintf(rel, sizeof(rel), "/lib/modules/%s/modules.dep", release);
	p = doctor_path(c, rel);
	*have_dep = p && read_file(p, 64u << 20, &dep, NULL, NULL) >= 0;
	return *have_dep && (strstr(dep, "/nvidia.ko:") || strstr(dep, "/nvidia.ko.xz:") ||
			     strstr(dep, "/nvidia.ko.zst:") || strstr(dep, "/nvidia.ko.gz:"));
}

/* The kernels DKMS built nvidia/<version> for: /var/lib/dkms/nvidia/<version>/<kernel>/. */
static void dkms_evidence(struct doctor_ctx *c, struct doctor_finding *f, const char *release, char *ver, size_t vsize)
{
	char vers[16][256], kernels[32][256], rel[PATH_MAX], line[700];
	size_t nv = doctor_dir_names(c, "/var/lib/dkms/nvidia", NULL, vers, ELEMENTSOF(vers));

	ver[0] = '\0';
	for (size_t i = 0; i < nv; i++) {
		size_t nk, used = 0;

		if (!strncmp(vers[i], "kernel-", 7))
			continue;
		snprintf(ver, vsize, "%s", vers[i]);
		snprintf(rel, sizeof(rel), "/var/lib/dkms/nvidia/%s", vers[i]);
		nk = doctor_dir_names(c, rel, NULL, kernels, ELEMENTSOF(kernels));
		line[0] = '\0';
		for (size_t k = 0; k < nk && used < sizeof(line); k++)
			if (!streq(kernels[k], "build") && !streq(kernels[k], "source"))
				used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s", used ? ", " : "",
							 kernels[k]);
		doctor_evidence(f, "DKMS has nvidia/%s built for: %s; not for %s", vers[i],
				line[0] ? line : "no kernel", release);
	}
}

static struct doctor_finding *no_module(struct doctor_ctx *c, struct kmod_facts *k)
{
	char build[PATH_MAX], hdr[PATH_MAX], ver[256], fix[1024];
	struct doctor_finding *f;
	bool have_dep, headers;

	if (!k->release[0] || module_built(c, k->release, &have_dep) || !have_dep)
		return NULL;
	snprintf(build, sizeof(build), "/lib/modules/%s/build", k->release);
	snprintf(hdr, sizeof(hdr), "/usr/src/linux-headers-%s", k->release);
	headers = node_exists(c, build) || node_exists(c, hdr);
	snprintf(
	    fix, sizeof(fix),
	    "%sbuild the module for %s: dkms autoinstall -k %s (or install the precompiled module package for this "
	    "kernel, e.g. linux-modules-nvidia-<branch>-<flavour> on Ubuntu), then modprobe nvidia",
	    headers ? ""
		    : "install the kernel headers (apt-get install linux-headers-$(uname -r), or dnf install "
		      "kernel-devel-$(uname -r)), then ",
	    k->release, k->release);
	f = doctor_report(c, "driver.no-module-for-kernel", DOCTOR_FAIL, LINK_DRIVER, fix,
			  "there is no NVIDIA kernel module for the running kernel %s: modprobe nvidia fails (\"Module "
			  "nvidia not found\"); DKMS built none%s",
			  k->release, headers ? "" : " because the kernel headers are missing");
	doctor_evidence(f, "/lib/modules/%s/modules.dep lists no nvidia.ko", k->release);
	doctor_evidence(f, "%s and %s%s", build, hdr, headers ? " exist" : " do not exist: no kernel headers");
	dkms_evidence(c, f, k->release, ver, sizeof(ver));
	if (ver[0]) {
		char rel[PATH_MAX];
		_cleanup_free_ char *p = NULL, *log = NULL;
		const char *err;

		snprintf(rel, sizeof(rel), "/var/lib/dkms/nvidia/%s/build/make.log", ver);
		p = doctor_path(c, rel);
		if (p && read_file(p, 16u << 20, &log, NULL, NULL) >= 0 && (err = strstr(log, "error")))
			doctor_evidence(f, "%s: %.*s", rel, (int)strcspn(err, "\n"), err);
	}
	return f;
}

/* First reason found wins: the owner of the GPUs before what refused the module, before a missing module. */
static struct doctor_finding *(*const reasons[])(struct doctor_ctx *c, struct kmod_facts *k) = {
    nouveau,
    unsigned_module,
    open_without_gsp,
    no_module,
};

struct doctor_finding *doctor_driver_why_not_loaded(struct doctor_ctx *c)
{
	static struct kmod_facts k; /* large: off the stack; the doctor is single-threaded */
	_cleanup_free_ char *osr = doctor_path(c, "/proc/sys/kernel/osrelease"), *text = NULL;
	struct doctor_finding *f = NULL;

	memset(&k, 0, sizeof(k));
	if (doctor_need_klog(c, &k.klog, NULL) < 0)
		k.klog = NULL;
	if (osr && read_file(osr, 4096, &text, NULL, NULL) >= 0)
		snprintf(k.release, sizeof(k.release), "%.*s", (int)strcspn(text, " \n"), text);
	k.n_gpus = doctor_pci_gpus(c, k.gpus, ELEMENTSOF(k.gpus));
	if (k.n_gpus > ELEMENTSOF(k.gpus))
		k.n_gpus = ELEMENTSOF(k.gpus);
	for (size_t i = 0; i < ELEMENTSOF(reasons) && !f; i++)
		f = reasons[i](c, &k);
	return f;
}
