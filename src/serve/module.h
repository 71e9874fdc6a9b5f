/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Serving modules: the parts of gpulet that need libgrpc or libmicrohttpd are shared objects that
 * the gpulet executable loads with dlopen the first time one of their functions is called, so that
 * the verbs that serve nothing (cdi, doctor, devices, lint, versions, labels, probe) start without
 * gRPC, abseil, libstdc++, microhttpd and gnutls (docs/HACKING.md "Lean start-up").
 *
 * How a call crosses over: the executable defines, for each function in SERVE_EXPORTS, a hidden
 * stand-in with the same prototype (src/serve/trampolines.c) that loads the module, looks the
 * function up in it and calls it. The module is linked from the same static library, so it holds
 * its own copy of every object it uses; the executable exports its symbols (--export-dynamic) and
 * ELF interposition makes the module use the executable's copy of shared state (the log level, ...).
 */
#pragma once

#include <stdbool.h>

#include "util/err.h"

enum serve_module {
	SERVE_GRPC, /* gpulet-grpc.so: the Device Plugin and DRA servers, the PodResources client */
	SERVE_HTTP, /* gpulet-http.so: the exporter's HTTP server (and what the exporter needs), doctor --serve-metrics
		     */
	_SERVE_MAX,
};

/*
 * Every function the executable reaches in a module: X(module, name). A function added here gets
 * its stand-in in trampolines.c (the compiler checks it against the header's prototype) and is
 * kept in the module by module.c. Core code calls these functions by their usual names.
 */
#define SERVE_EXPORTS(X)                      \
	X(SERVE_GRPC, cmd_plugin)             \
	X(SERVE_GRPC, cmd_dra)                \
	X(SERVE_GRPC, podres_list)            \
	X(SERVE_GRPC, podres_find)            \
	X(SERVE_GRPC, podres_map_free)        \
	X(SERVE_GRPC, allocresp_decode)       \
	X(SERVE_HTTP, cmd_exporter)           \
	X(SERVE_HTTP, exp_http_start)         \
	X(SERVE_HTTP, exp_http_set_exporter)  \
	X(SERVE_HTTP, exp_http_set_not_ready) \
	X(SERVE_HTTP, exp_http_port)          \
	X(SERVE_HTTP, exp_http_stop)          \
	X(SERVE_HTTP, doctor_serve)

/* A module from another build is refused: both sides compare this string. */
#define SERVE_ABI        "gpulet-module/1 " GPULET_VERSION
#define SERVE_ABI_SYMBOL "gpulet_module_abi"

/* The file name of a module ("gpulet-grpc.so") and where it is looked for, relative to the
 * directory of the running executable: the build tree keeps them side by side, an install puts
 * them in <prefix>/lib/gpulet next to <prefix>/bin/gpulet. */
const char *serve_module_file(enum serve_module m);
#define SERVE_MODULE_DIRS            \
	{                            \
		".", "../lib/gpulet" \
	}

/*
 * The address of name in module m, loading the module on first use (thread-safe). NULL when the
 * module cannot be found, is not safe to load (writable by others, owned by someone else) or is
 * from another build; err then says which file and what to do.
 */
void *serve_symbol(enum serve_module m, const char *name, struct gerr *err);

/* true once module m is loaded (objects of a module exist only when it is) */
bool serve_module_loaded(enum serve_module m);
