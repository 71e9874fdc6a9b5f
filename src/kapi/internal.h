/* SPDX-License-Identifier: Apache-2.0 */
/* What client.c, curl.c and informer.c share; not for users of kapi (they include kapi/kapi.h). */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>

#include "kapi/bucket.h"
#include "kapi/config.h"
#include "kapi/kapi.h"
#include "kapi/wire.h"

/*
 * libcurl, loaded with dlopen (lean start-up: docs/HACKING.md §7): X(member, symbol). The members are
 * typed from curl.h, so a call through them is checked like a direct one (a variadic setopt
 * excepted: its argument is long, a pointer or curl_off_t, as curl_easy_setopt(3) lists per option).
 */
#define KAPI_CURL_FUNCTIONS(X)                           \
	X(global_init, curl_global_init)                 \
	X(version_info, curl_version_info)               \
	X(easy_init, curl_easy_init)                     \
	X(easy_cleanup, curl_easy_cleanup)               \
	X(easy_reset, curl_easy_reset)                   \
	X(easy_setopt, curl_easy_setopt)                 \
	X(easy_perform, curl_easy_perform)               \
	X(easy_getinfo, curl_easy_getinfo)               \
	X(easy_strerror, curl_easy_strerror)             \
	X(slist_append, curl_slist_append)               \
	X(slist_free_all, curl_slist_free_all)           \
	X(multi_init, curl_multi_init)                   \
	X(multi_cleanup, curl_multi_cleanup)             \
	X(multi_add_handle, curl_multi_add_handle)       \
	X(multi_remove_handle, curl_multi_remove_handle) \
	X(multi_perform, curl_multi_perform)             \
	X(multi_poll, curl_multi_poll)                   \
	X(multi_wakeup, curl_multi_wakeup)               \
	X(multi_info_read, curl_multi_info_read)

struct kapi_curl {
#define KAPI_CURL_MEMBER(m, sym) __typeof__(sym) *m;
	KAPI_CURL_FUNCTIONS(KAPI_CURL_MEMBER)
#undef KAPI_CURL_MEMBER
	unsigned version_num; /* 0x075801 for 7.88.1 */
};

/* Load libcurl once per process (never unloaded): 0 with *ret, or -ENOPKG with err saying why. */
int kapi_curl_load(const struct kapi_curl **ret, struct gerr *err);

#define KAPI_POOL_MAX 4 /* idle easy handles kept, each with its open connection */

struct kapi {
	struct kapi_config *cfg;
	const struct kapi_curl *curl;
	char *user_agent;
	char *field_manager;
	unsigned timeout_s;
	size_t max_response;
	int64_t token_period_ns;

	pthread_mutex_t lock; /* what follows */
	struct kapi_bucket bucket;
	char *token;           /* the bearer token in use (NULL: none) */
	int64_t token_read_ns; /* when it was read from cfg->token_file */
	CURL *pool[KAPI_POOL_MAX];
	size_t n_pool;

	struct kapi_stats stats; /* __atomic counters */
};

/* A request's cancellation: an informer's multi handle; kapi_cancel_stop() wakes it at once. */
struct kapi_cancel {
	CURLM *multi;
	bool stop; /* __atomic */
};

/*
 * One request. The caller fills the first part; kapi_call_run() the answer. With sink set, a 2xx
 * body goes to sink piece by piece (a watch) instead of into resp.
 */
struct kapi_call {
	struct kapi_what what;
	const char *method; /* GET POST PUT PATCH DELETE */
	char *url;          /* owned */
	const char *content_type;
	const char *body;
	size_t body_len;
	long timeout_s; /* 0: the client's */
	int (*sink)(const char *data, size_t len, void *userdata);
	void *sink_data;

	long http;
	char *resp; /* NUL-terminated */
	size_t resp_len;
	/* private to client.c */
	const struct kapi_curl *curl;
	CURL *easy;
	struct kapi_stats *stats;
	size_t resp_cap, resp_max;
	uint64_t bytes_in;
	int sink_error;
	bool too_big;
	char errbuf[CURL_ERROR_SIZE];
};

/* The URL of a request: server + kapi_path(); *ret owned by the caller. */
int kapi_url(const struct kapi *k, const struct kapi_what *w, char **ret, struct gerr *err);

/* Run it (token bucket, token, retries); 0 for a 2xx answer, else -errno with err. */
int kapi_call_run(struct kapi *k, struct kapi_call *c, struct kapi_cancel *cancel, struct gerr *err);
void kapi_call_done(struct kapi_call *c);

/* LIST every page (kapi_list's body), cancellable. */
int kapi_list_all(struct kapi *k, const struct kapi_resource *r, const char *ns, const struct kapi_list_options *o,
		  struct kapi_cancel *cancel, json_t **ret, struct gerr *err);

/* Sleep ns (cancel: until woken by kapi_cancel_stop()); -ECANCELED when stopped. */
int kapi_nap(struct kapi *k, struct kapi_cancel *cancel, int64_t ns);
int kapi_cancel_init(struct kapi *k, struct kapi_cancel *c);
void kapi_cancel_stop(struct kapi *k, struct kapi_cancel *c);
void kapi_cancel_done(struct kapi *k, struct kapi_cancel *c);

int64_t kapi_now_ns(void);
