/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --enable-exporter-metrics (dcgm-exporter 4.8.4): metrics about the exporter process itself, under
 * the names Prometheus' client_golang gives them (its process collector, and promhttp's instrumentation
 * of the /metrics handler), so the dashboards and alerts written for any Go exporter read them.
 * dcgm-exporter also serves go_* (its Go runtime); gpulet has no Go runtime and serves none of those
 * (docs/reference/dcgm-exporter.md section 5).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "exporter/exporter.h"
#include "util/fileio.h"

/* /proc/self/stat fields 14, 15 (utime, stime: ticks), 22 (starttime: ticks after boot), 23 (vsize), 24 (rss) */
static bool read_stat(double *cpu_s, double *start_ticks, double *vsize, double *rss_pages)
{
	char buf[1024];
	unsigned long long ut, st, start, vs;
	long long rss;
	const char *p;

	if (read_line_file("/proc/self/stat", buf, sizeof(buf)) < 0 || !(p = strrchr(buf, ')')))
		return false;
	/* after the command: state (3), then fields 4..; skip to utime (14) */
	if (sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld", &ut,
		   &st, &start, &vs, &rss) != 5)
		return false;
	*cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	*start_ticks = (double)start;
	*vsize = (double)vs;
	*rss_pages = (double)rss;
	return true;
}

/* btime of /proc/stat: the boot time, seconds since the epoch */
static double boot_time(void)
{
	_cleanup_free_ char *text = NULL;
	const char *p;

	if (read_file("/proc/stat", 1 << 20, &text, NULL, NULL) < 0 || !(p = strstr(text, "\nbtime ")))
		return 0;
	return strtod(p + 7, NULL);
}

static double open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	double n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static double limit(int resource)
{
	struct rlimit rl;

	if (getrlimit(resource, &rl) < 0)
		return -1;
	return rl.rlim_cur == RLIM_INFINITY ? 18446744073709551615.0 : (double)rl.rlim_cur;
}

void exp_self_render(struct strbuf *b, const struct exp_self_stats *s)
{
	double cpu, start, vsize, rss, fds = open_fds(), max_fds = limit(RLIMIT_NOFILE), max_vm = limit(RLIMIT_AS);

	if (read_stat(&cpu, &start, &vsize, &rss)) {
		strbuf_printf(
		    b,
		    "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
		    "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\n"
		    "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
		    "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %.0f\n"
		    "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
		    "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.2f\n"
		    "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
		    "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %.0f\n",
		    cpu, rss * (double)sysconf(_SC_PAGESIZE), boot_time() + start / (double)sysconf(_SC_CLK_TCK),
		    vsize);
	}
	if (fds >= 0)
		strbuf_printf(b,
			      "# HELP process_open_fds Number of open file descriptors.\n"
			      "# TYPE process_open_fds gauge\nprocess_open_fds %.0f\n",
			      fds);
	if (max_fds >= 0)
		strbuf_printf(b,
			      "# HELP process_max_fds Maximum number of open file descriptors.\n"
			      "# TYPE process_max_fds gauge\nprocess_max_fds %.0f\n",
			      max_fds);
	if (max_vm >= 0)
		strbuf_printf(b,
			      "# HELP process_virtual_memory_max_bytes Maximum amount of virtual memory available in "
			      "bytes.\n"
			      "# TYPE process_virtual_memory_max_bytes gauge\nprocess_virtual_memory_max_bytes %.17g\n",
			      max_vm);
	strbuf_printf(b,
		      "# HELP promhttp_metric_handler_requests_in_flight Current number of scrapes being served.\n"
		      "# TYPE promhttp_metric_handler_requests_in_flight gauge\n"
		      "promhttp_metric_handler_requests_in_flight 1\n"
		      "# HELP promhttp_metric_handler_requests_total Total number of scrapes by HTTP status code.\n"
		      "# TYPE promhttp_metric_handler_requests_total counter\n"
		      "promhttp_metric_handler_requests_total{code=\"200\"} %llu\n"
		      "promhttp_metric_handler_requests_total{code=\"500\"} %llu\n"
		      "promhttp_metric_handler_requests_total{code=\"503\"} %llu\n",
		      (unsigned long long)atomic_load(&s->ok), (unsigned long long)atomic_load(&s->failed),
		      (unsigned long long)atomic_load(&s->unavailable));
}
