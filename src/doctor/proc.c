/* SPDX-License-Identifier: Apache-2.0 */
/* A process running on the node, found by its program name (doctor/proc.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor.h"
#include "doctor/proc.h"
#include "util/fileio.h"

#define MAX_PROCS 100000 /* /proc entries looked at, at most */

static bool named(const char *argv0, const char *const *names, size_t n)
{
	const char *base = strrchr(argv0, '/');

	base = base ? base + 1 : argv0;
	for (size_t k = 0; k < n; k++)
		if (streq(base, names[k]))
			return true;
	return false;
}

bool doctor_find_process(const struct doctor_ctx *c, const char *const *names, size_t n_names, char *pid,
			 size_t pid_size, char *cmd, size_t cmd_size)
{
	_cleanup_free_ char *dir = doctor_path(c, "/proc");
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;
	bool found = false;

	for (size_t seen = 0; d && !found && seen < MAX_PROCS && (de = readdir(d)); seen++) {
		_cleanup_free_ char *p = NULL, *text = NULL;
		size_t len = 0;

		if (de->d_name[strspn(de->d_name, "0123456789")] != '\0' || de->d_name[0] == '\0' ||
		    asprintf(&p, "%s/%s/cmdline", dir, de->d_name) < 0 ||
		    read_file(p, 1 << 16, &text, &len, NULL) < 0 || !len || !named(text, names, n_names))
			continue;
		for (size_t k = 0; k + 1 < len; k++)
			if (text[k] == '\0')
				text[k] = ' ';
		snprintf(pid, pid_size, "%s", de->d_name);
		snprintf(cmd, cmd_size, "%s", text);
		found = true;
	}
	if (d)
		closedir(d);
	return found;
}
