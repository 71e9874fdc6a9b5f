/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dcgm-exporter's HPC job mapping (--hpc-job-mapping-dir, internal/pkg/transformation/hpc.go;
 * docs/reference/dcgm-exporter.md section 9): a directory a job scheduler (Slurm's prolog) fills with
 * one file per GPU, named by its index ("0") or, for a MIG instance, "<gpu>.<GPU instance id>"
 * ("2.3"), holding the ids of the jobs on it, one per line. Read again on every scrape, as upstream;
 * each series of that device is served once per job with the label hpc_job.
 *
 * The directory is written by another program on the host and read by a root process whose output
 * anyone who can scrape sees: a file is opened without following a symlink and must be a regular
 * file; sizes, files and jobs are bounded; a job id is printable text (others are left out).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exporter/hpc.h"
#include "util/fileio.h"
#include "util/macro.h"

void exp_hpc_free(struct exp_hpc *h)
{
	for (size_t i = 0; i < h->n; i++) {
		for (size_t k = 0; k < h->v[i].n; k++)
			free(h->v[i].jobs[k]);
		free(h->v[i].jobs);
	}
	free(h->v);
	*h = (struct exp_hpc){0};
}

/* upstream's file name rule ^\d+(\.\d+)?$ (validGPUFile) */
static bool gpu_file_name(const char *s)
{
	size_t n = strspn(s, "0123456789");

	if (!n || n > 10)
		return false;
	if (!s[n])
		return true;
	if (s[n] != '.')
		return false;
	s += n + 1;
	n = strspn(s, "0123456789");
	return n && n <= 10 && !s[n];
}

int exp_hpc_parse(const char *text, size_t len, struct exp_hpc_entry *ret)
{
	size_t start = 0;

	for (size_t i = 0; i <= len; i++) {
		if (i < len && text[i] != '\n')
			continue;
		size_t n = i - start;
		const char *line = text + start;
		bool ok = n > 0 && n <= EXP_HPC_JOB_MAX;
		bool dup = false;

		if (n && line[n - 1] == '\r')
			n--, ok = n > 0; /* bufio.Scanner drops a \r before \n */
		for (size_t k = 0; ok && k < n; k++)
			ok = isprint((unsigned char)line[k]) && line[k] != '"' && line[k] != '\\';
		for (size_t k = 0; ok && k < ret->n && !dup; k++)
			dup = strlen(ret->jobs[k]) == n && memcmp(ret->jobs[k], line, n) == 0;
		start = i + 1;
		if (!ok || dup || ret->n >= EXP_HPC_JOBS_MAX)
			continue;
		char **grown = realloc(ret->jobs, (ret->n + 1) * sizeof(*ret->jobs));
		if (!grown)
			return -ENOMEM;
		ret->jobs = grown;
		if (!(ret->jobs[ret->n] = strndup(line, n)))
			return -ENOMEM;
		ret->n++;
	}
	return 0;
}

/* One mapping file: a regular file, not followed through a symlink, read up to the bound. */
static int read_one(int dfd, const char *name, struct exp_hpc_entry *ret)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	char buf[EXP_HPC_FILE_MAX];
	struct stat st;
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -EINVAL;
	while (len < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	return exp_hpc_parse(buf, len, ret);
}

int exp_hpc_read(const char *root, const char *dir, struct exp_hpc *ret)
{
	_cleanup_free_ char *path = root_path(root, dir);
	_cleanup_close_ int dfd = -1;
	struct exp_hpc h = {0};
	DIR *d;
	struct dirent *de;
	int r = 0;

	*ret = (struct exp_hpc){0};
	if (!path)
		return -ENOMEM;
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	d = fdopendir(dup(dfd));
	if (!d)
		return -errno;
	while (r == 0 && (de = readdir(d)) && h.n < EXP_HPC_FILES_MAX) {
		struct exp_hpc_entry e = {0};

		if (!gpu_file_name(de->d_name))
			continue;
		snprintf(e.key, sizeof(e.key), "%s", de->d_name);
		if (read_one(dfd, de->d_name, &e) < 0 || !e.n) {
			for (size_t k = 0; k < e.n; k++)
				free(e.jobs[k]);
			free(e.jobs);
			continue; /* a directory, a symlink, unreadable or empty: no jobs for that GPU */
		}
		struct exp_hpc_entry *grown = realloc(h.v, (h.n + 1) * sizeof(*h.v));
		if (!grown) {
			for (size_t k = 0; k < e.n; k++)
				free(e.jobs[k]);
			free(e.jobs);
			r = -ENOMEM;
			break;
		}
		h.v = grown;
		h.v[h.n++] = e;
	}
	closedir(d);
	if (r < 0) {
		exp_hpc_free(&h);
		return r;
	}
	*ret = h;
	return 0;
}

const struct exp_hpc_entry *exp_hpc_find(const struct exp_hpc *h, unsigned gpu, int gi)
{
	char key[32];

	if (gi < 0)
		snprintf(key, sizeof(key), "%u", gpu);
	else
		snprintf(key, sizeof(key), "%u.%d", gpu, gi);
	for (size_t i = 0; h && i < h->n; i++)
		if (streq(h->v[i].key, key))
			return &h->v[i];
	return NULL;
}
