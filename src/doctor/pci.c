/* SPDX-License-Identifier: Apache-2.0 */
/* The NVIDIA GPUs on the node's PCI bus (doctor/pci.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "doctor/pci.h"
#include "util/fileio.h"

#define PCI_DIR "/sys/bus/pci/devices"

static bool read_small(const char *dir, const char *name, char *buf, size_t size)
{
	_cleanup_free_ char *p = NULL, *text = NULL;

	buf[0] = '\0';
	if (asprintf(&p, "%s/%s", dir, name) < 0 || read_file(p, 1 << 16, &text, NULL, NULL) < 0)
		return false;
	snprintf(buf, size, "%.*s", (int)strcspn(text, "\n"), text);
	return true;
}

/* resource: one "start end flags" line per BAR; BAR1 (line 2) all zero = the kernel assigned it no window */
static bool bar1_unset(const char *dir)
{
	_cleanup_free_ char *p = NULL, *text = NULL;
	unsigned long long start, end, flags;
	const char *l;

	if (asprintf(&p, "%s/resource", dir) < 0 || read_file(p, 1 << 16, &text, NULL, NULL) < 0 ||
	    !(l = strchr(text, '\n')))
		return false;
	return sscanf(l + 1, "%llx %llx %llx", &start, &end, &flags) == 3 && start == 0 && end == 0;
}

static bool one_gpu(const struct doctor_ctx *c, const char *dir, const char *name, struct pci_gpu *g)
{
	char vendor[16], class[16], device[16], link[PATH_MAX], sub[PATH_MAX];
	ssize_t n;

	if (!read_small(dir, "vendor", vendor, sizeof(vendor)) || strtoul(vendor, NULL, 16) != 0x10de ||
	    !read_small(dir, "class", class, sizeof(class)) || (strtoul(class, NULL, 16) >> 16) != 0x03)
		return false;
	memset(g, 0, sizeof(*g));
	snprintf(g->bdf, sizeof(g->bdf), "%s", name);
	if (read_small(dir, "device", device, sizeof(device)))
		g->device = (unsigned)strtoul(device, NULL, 16);
	snprintf(sub, sizeof(sub), "%s/driver", dir);
	n = readlink(sub, link, sizeof(link) - 1);
	if (n > 0) {
		const char *base;

		link[n] = '\0';
		base = strrchr(link, '/');
		snprintf(g->driver, sizeof(g->driver), "%s", base ? base + 1 : link);
	}
	if (read_small(dir, "driver_override", g->override, sizeof(g->override)) && streq(g->override, "(null)"))
		g->override[0] = '\0';
	g->bar1_unset = bar1_unset(dir);
	snprintf(sub, sizeof(sub), "/proc/driver/nvidia/gpus/%s", name);
	{
		_cleanup_free_ char *p = doctor_path(c, sub);

		g->in_proc = p && access(p, F_OK) == 0;
	}
	return true;
}

size_t doctor_pci_gpus(const struct doctor_ctx *c, struct pci_gpu *gpus, size_t max)
{
	_cleanup_free_ char *base = doctor_path(c, PCI_DIR);
	DIR *d = base ? opendir(base) : NULL;
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		_cleanup_free_ char *dir = NULL;
		struct pci_gpu g;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(g.bdf) ||
		    asprintf(&dir, "%s/%s", base, de->d_name) < 0 || !one_gpu(c, dir, de->d_name, &g))
			continue;
		if (n < max)
			gpus[n] = g;
		n++;
	}
	closedir(d);
	return n;
}

size_t doctor_pci_gpu_count(const struct doctor_ctx *c)
{
	struct pci_gpu one;

	return doctor_pci_gpus(c, &one, 0);
}

bool pci_gpu_before_turing(unsigned device)
{
	return device && device < 0x1e00;
}
