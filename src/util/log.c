/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/log.h"

static enum log_level current = LOG_LVL_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct {
	const char *name;
	enum log_level level;
} level_names[] = {
    {"debug", LOG_LVL_DEBUG},  {"info", LOG_LVL_INFO},   {"warn", LOG_LVL_WARN},
    {"warning", LOG_LVL_WARN}, {"error", LOG_LVL_ERROR},
};

int log_set_level_name(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
		if (strcasecmp(name, level_names[i].name) == 0) {
			current = level_names[i].level;
			return 0;
		}
	return -EINVAL;
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
	static const char *const names[] = {"debug", "info", "warn", "error"};
	char ts[64];
	struct timespec now;
	struct tm tm;

	if (l < current)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	pthread_mutex_lock(&log_lock);
	fprintf(stderr, "time=%s.%03ldZ level=%s msg=\"%s\"", ts, now.tv_nsec / 1000000, names[l], msg);
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
