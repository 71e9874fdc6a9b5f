/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the API server sends and how we address it, without any I/O (unit tests and the fuzz
 * target call these directly): the watch event stream decoder, Status objects and the error words
 * built from them, request paths. docs/reference/kube-api.md §2-§5.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kapi/kapi.h"
#include "util/err.h"

/* -- the watch stream ------------------------------------------------------------------------ */

enum kapi_event_type {
	KAPI_EVENT_ADDED,
	KAPI_EVENT_MODIFIED,
	KAPI_EVENT_DELETED,
	KAPI_EVENT_BOOKMARK,
	KAPI_EVENT_ERROR, /* object is a Status */
};

/* One event; object is borrowed for the call. A negative return stops kapi_stream_feed() with it. */
typedef int (*kapi_event_fn)(enum kapi_event_type type, json_t *object, void *userdata);

/*
 * A watch response body is a sequence of JSON objects {"type":..,"object":{..}} (the server writes a
 * newline after each; we frame by the JSON itself, so either way works). Fed in arbitrary pieces; only
 * the unfinished event is kept, and one larger than max is an error: memory stays bounded by max.
 */
struct kapi_stream {
	char *buf; /* the unfinished event's bytes */
	size_t len, cap;
	size_t max;     /* bytes of one event */
	unsigned depth; /* braces and brackets open */
	bool in_string, escaped;
	unsigned long long events;  /* events decoded (unknown types included) */
	unsigned long long skipped; /* events of a type we do not know (skipped, as client-go logs them) */
};

void kapi_stream_init(struct kapi_stream *s, size_t max);
void kapi_stream_done(struct kapi_stream *s);
/*
 * Frame and decode data[0..len); fn gets each complete event. Returns 0, fn's negative value, or
 * -EMSGSIZE (an event over max), -EBADMSG (not a watch event: not JSON, no type or object) with err.
 */
int kapi_stream_feed(struct kapi_stream *s, const char *data, size_t len, kapi_event_fn fn, void *userdata,
		     struct gerr *err);
/* Whether an event was left unfinished (the stream ended in the middle of one). */
bool kapi_stream_pending(const struct kapi_stream *s);

/* -- Status objects and errors --------------------------------------------------------------- */

struct kapi_status {
	int code;            /* the HTTP code it reports, 0 if none */
	const char *reason;  /* "NotFound", "Expired", ... or "" (borrowed from the object) */
	const char *message; /* "" when none */
	int retry_after_s;   /* details.retryAfterSeconds, 0 if none */
};

/* Read a Status object; -EBADMSG when obj is not one (kind must be Status). */
int kapi_status_decode(const json_t *obj, struct kapi_status *ret);

/* The errno for an answer: by reason where it tells more than the code (409), else by code. */
int kapi_status_errno(int http_code, const char *reason);

/* What a request was, for messages: "list" resourceslices.resource.k8s.io, at cluster scope. */
struct kapi_what {
	const char *verb; /* as RBAC names it: get list watch create update patch delete */
	const struct kapi_resource *res;
	const char *ns;   /* NULL: cluster scope (or all namespaces for list/watch) */
	const char *name; /* NULL for list/watch/create */
	const char *subresource;
};

/* "nodes gpu-1", "configmaps default/cfg", "resourceslices.resource.k8s.io at cluster scope",
 * "pods in namespace x", "nodes/status gpu-1" */
void kapi_what_name(const struct kapi_what *w, char *buf, size_t size);

/*
 * The error for an HTTP answer that is not 2xx: body (may be NULL) is decoded as a Status when it is
 * one, else quoted (cut, control characters dropped). Fills err with the verb, the resource, the object,
 * the server's words and, for a 403, the RBAC rule that would allow it. Returns -errno.
 */
int kapi_http_error(const struct kapi_what *w, long http_code, const char *body, size_t len, struct gerr *err);

/* The same for a watch ERROR event's Status. */
int kapi_status_error(const struct kapi_what *w, const json_t *status, struct gerr *err);

/* -- request paths --------------------------------------------------------------------------- */

/*
 * The path of a request below the server URL: /api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUB]] or
 * /apis/GROUP/VERSION/..., each segment percent-encoded. A name or namespace that is empty, "." or
 * ".." is refused (-EINVAL), as the server would refuse it. *ret is a new string.
 */
int kapi_path(const struct kapi_resource *r, const char *ns, const char *name, const char *subresource, char **ret,
	      struct gerr *err);

/* Append "&key=value" (the first one with '?') to *url, value percent-encoded. -ENOMEM only. */
int kapi_query_add(char **url, const char *key, const char *value);
