/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The executable's stand-ins for the functions that live in a serving module (module.h): each has
 * the prototype of the header it comes from (the compiler checks), loads the module on first call
 * and calls the module's function. Hidden, so the module's own calls never land here. Executable
 * only: unit tests link the real functions from gpulet_lib.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd/cmd.h"
#include "doctor/daemon.h"
#include "exporter/exporter.h"
#include "kube/allocresp.h"
#include "kube/podres.h"
#include "serve/module.h"

#define STAND_IN __attribute__((visibility("hidden")))

/* The module's fn, resolved once; NULL (and err filled) when the module cannot be loaded. */
#define RESOLVE(mod, fn, err)                                            \
	({                                                               \
		static typeof(&fn) p_;                                   \
		typeof(&fn) f_ = __atomic_load_n(&p_, __ATOMIC_ACQUIRE); \
		if (!f_) {                                               \
			f_ = (typeof(&fn))serve_symbol(mod, #fn, err);   \
			__atomic_store_n(&p_, f_, __ATOMIC_RELEASE);     \
		}                                                        \
		f_;                                                      \
	})

/* A function that only takes objects the module made: reached only once the module is loaded. */
#define MUST_RESOLVE(mod, fn)                                                          \
	({                                                                             \
		struct gerr e_ = {0};                                                  \
		typeof(&fn) g_ = RESOLVE(mod, fn, &e_);                                \
		if (!g_) { /* cannot happen: the object came from the loaded module */ \
			fprintf(stderr, "gpulet: %s\n", e_.msg);                       \
			abort();                                                       \
		}                                                                      \
		g_;                                                                    \
	})

/* A verb that lives in a module: the reason on stderr and exit status 1 when it cannot be loaded. */
#define VERB_STAND_IN(mod, fn)                                              \
	STAND_IN int fn(int argc, char **argv)                              \
	{                                                                   \
		struct gerr e = {0};                                        \
		typeof(&fn) f = RESOLVE(mod, fn, &e);                       \
		if (!f) {                                                   \
			fprintf(stderr, "gpulet %s: %s\n", argv[0], e.msg); \
			return 1;                                           \
		}                                                           \
		return f(argc, argv);                                       \
	}

VERB_STAND_IN(SERVE_GRPC, cmd_plugin)
VERB_STAND_IN(SERVE_GRPC, cmd_dra)
VERB_STAND_IN(SERVE_HTTP, cmd_exporter)

STAND_IN int podres_list(const char *root, const char *socket, int timeout_ms, const char *const *extra_resources,
			 struct podres_map **ret, struct gerr *err)
{
	struct gerr e = {0};
	typeof(&podres_list) f = RESOLVE(SERVE_GRPC, podres_list, &e);

	if (!f)
		return gerr_set(err, e.code ? e.code : ENOEXEC, "%s", e.msg);
	return f(root, socket, timeout_ms, extra_resources, ret, err);
}

/* The doctor reads kubelet's checkpoint: its AllocResp is protobuf, decoded in the gRPC module. */
STAND_IN int allocresp_decode(const char *b64, struct allocresp *ret, struct gerr *err)
{
	struct gerr e = {0};
	typeof(&allocresp_decode) f = RESOLVE(SERVE_GRPC, allocresp_decode, &e);

	if (!f)
		return gerr_set(err, e.code ? e.code : ENOEXEC, "%s", e.msg);
	return f(b64, ret, err);
}

STAND_IN size_t podres_find(const struct podres_map *m, const char *uuid, const struct podres_device **ret_first)
{
	if (!serve_module_loaded(SERVE_GRPC)) /* only the module makes maps: none exists yet */
		return 0;
	return MUST_RESOLVE(SERVE_GRPC, podres_find)(m, uuid, ret_first);
}

STAND_IN void podres_map_free(struct podres_map *m)
{
	if (serve_module_loaded(SERVE_GRPC))
		MUST_RESOLVE(SERVE_GRPC, podres_map_free)(m);
}

STAND_IN int exp_http_start(const struct exp_http_options *o, struct exp_http **ret, struct gerr *err)
{
	struct gerr e = {0};
	typeof(&exp_http_start) f = RESOLVE(SERVE_HTTP, exp_http_start, &e);

	if (!f)
		return gerr_set(err, e.code ? e.code : ENOEXEC, "%s", e.msg);
	return f(o, ret, err);
}

STAND_IN void exp_http_set_exporter(struct exp_http *h, struct exporter *e)
{
	MUST_RESOLVE(SERVE_HTTP, exp_http_set_exporter)(h, e);
}

STAND_IN void exp_http_set_not_ready(struct exp_http *h, const char *why)
{
	MUST_RESOLVE(SERVE_HTTP, exp_http_set_not_ready)(h, why);
}

STAND_IN unsigned exp_http_port(const struct exp_http *h)
{
	return MUST_RESOLVE(SERVE_HTTP, exp_http_port)(h);
}

STAND_IN void exp_http_stop(struct exp_http *h)
{
	MUST_RESOLVE(SERVE_HTTP, exp_http_stop)(h);
}

/* gpulet doctor --serve-metrics: the walks run in the module too (one copy of the doctor per process). */
STAND_IN int doctor_serve(const struct doctor_options *o, const struct doctor_serve_options *so, struct gerr *err)
{
	struct gerr e = {0};
	typeof(&doctor_serve) f = RESOLVE(SERVE_HTTP, doctor_serve, &e);

	if (!f)
		return gerr_set(err, e.code ? e.code : ENOEXEC, "%s", e.msg);
	return f(o, so, err);
}
