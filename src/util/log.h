/* SPDX-License-Identifier: Apache-2.0 */
/* Daemon logging: one logfmt line per event on stderr. Only src/cmd/ and the daemons (plugin, exporter) log above
 * debug. */
#pragma once

#include "util/macro.h"
#include "util/optspec.h"

enum log_level { LOG_LVL_DEBUG, LOG_LVL_INFO, LOG_LVL_WARN, LOG_LVL_ERROR };

/* The level names, in any case: debug, info, warn (or warning), error. */
extern const struct enum_name log_level_names[5];

/*
 * --log-level (env LOG_LEVEL) of every verb that has one: the level into the enum log_level at off
 * of the verb's options, by log_level_names' one rule.
 */
#define LOG_OPT_LEVEL(off_)                                                                                 \
	{                                                                                                   \
		.name = "log-level", .kind = OPT_ENUM, .arg = "LEVEL", .env = {"LOG_LEVEL"}, .def = "info", \
		.help = "log verbosity: debug, info, warn (warning) or error", .off = (off_),               \
		.names = log_level_names, .n_names = ELEMENTSOF(log_level_names), .icase = true             \
	}

/* Accepts debug|info|warn|warning|error; returns -EINVAL otherwise. */
int log_set_level_name(const char *name);
void log_set_level(enum log_level l);
enum log_level log_get_level(void);

/*
 * log_emit(LOG_LVL_INFO, "Registered device plugin", "resource=%s socket=%s", res, sock)
 * prints: time=2026-12-02T10:00:00.123Z level=info msg="Registered device plugin" resource=... socket=...
 * kv is a printf format of space-separated key=value pairs and may be NULL. Each value (the format
 * after '=' up to the next space, or between quotes when the format quotes it) is formatted on its
 * own and written as logfmt readers expect: quoted and escaped when it holds a space, '=', '"' or a
 * control character; a value the format quotes stays quoted (docs/reference/logging.md §3).
 */
void log_emit(enum log_level l, const char *msg, const char *kv, ...) _printf_(3, 4);

#define log_debug(msg, ...) log_emit(LOG_LVL_DEBUG, msg, __VA_ARGS__)
#define log_info(msg, ...)  log_emit(LOG_LVL_INFO, msg, __VA_ARGS__)
#define log_warn(msg, ...)  log_emit(LOG_LVL_WARN, msg, __VA_ARGS__)
#define log_error(msg, ...) log_emit(LOG_LVL_ERROR, msg, __VA_ARGS__)
