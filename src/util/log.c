/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/enumtab.h"
#include "util/log.h"

static enum log_level current = LOG_LVL_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

/* The first row of a level is the name it is logged as; later rows are aliases --log-level accepts. */
static const struct enum_name level_names[] = {
    {LOG_LVL_DEBUG, "debug"}, {LOG_LVL_INFO, "info"},    {LOG_LVL_WARN, "warn"},
    {LOG_LVL_ERROR, "error"}, {LOG_LVL_WARN, "warning"},
};

int log_set_level_name(const char *name)
{
	return enum_from_name_icase(level_names, name, &current);
}

void log_set_level(enum log_level l)
{
	current = l;
}
enum log_level log_get_level(void)
{
	return current;
}

void log_emit(enum log_level l, const char *msg, const char *kv, ...)
{
	char ts[64];
	struct timespec now;
	struct tm tm;

	if (l < current)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	pthread_mutex_lock(&log_lock);
	fprintf(stderr, "time=%s.%03ldZ level=%s msg=\"%s\"", ts, now.tv_nsec / 1000000,
		enum_to_name(level_names, l, "?"), msg);
	if (kv && *kv) {
		va_list ap;

		fputc(' ', stderr);
		va_start(ap, kv);
		vfprintf(stderr, kv, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
	fflush(stderr);
	pthread_mutex_unlock(&log_lock);
}
