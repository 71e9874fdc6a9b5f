/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Status objects, errno, and the words of an error (docs/reference/kube-api.md §4): the server's
 * message quoted, the verb, resource and object named, and for a 403 the RBAC rule that is missing.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kapi/wire.h"
#include "util/macro.h"

/*
 * Reason (k8s.io/apimachinery pkg/apis/meta/v1/types.go StatusReason) and HTTP code -> errno. A
 * row with a reason matches that reason; a row without one matches the code. First match wins.
 */
static const struct {
	int code;
	const char *reason;
	int err;
} status_errnos[] = {
    {409, "AlreadyExists", EEXIST},
    {409, "Conflict", ESTALE}, /* optimistic concurrency: the resourceVersion we sent is stale */
    {0, "Expired", ETIME},     /* 410: the resourceVersion is older than what the server keeps */
    {0, "Gone", ETIME},
    {400, NULL, EINVAL},
    {401, NULL, EKEYREJECTED},
    {403, NULL, EACCES},
    {404, NULL, ENOENT},
    {405, NULL, EOPNOTSUPP},
    {406, NULL, EPROTONOSUPPORT},
    {409, NULL, ESTALE},
    {410, NULL, ETIME},
    {413, NULL, EFBIG},
    {415, NULL, EPROTONOSUPPORT},
    {422, NULL, EINVAL},
    {429, NULL, EBUSY},
    {503, NULL, EAGAIN},
    {504, NULL, ETIMEDOUT},
};

int kapi_status_errno(int http_code, const char *reason)
{
	for (size_t i = 0; i < ELEMENTSOF(status_errnos); i++) {
		if (status_errnos[i].reason ? reason && streq(reason, status_errnos[i].reason)
					    : status_errnos[i].code == http_code)
			return status_errnos[i].err;
	}
	return http_code >= 500 ? EIO : EPROTO;
}

static const char *str(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : "";
}

int kapi_status_decode(const json_t *obj, struct kapi_status *ret)
{
	const json_t *code = json_object_get(obj, "code"), *details = json_object_get(obj, "details"), *ra;

	if (!json_is_object(obj) || !streq(str(obj, "kind"), "Status"))
		return -EBADMSG;
	ra = json_object_get(details, "retryAfterSeconds");
	*ret = (struct kapi_status){
	    .code = json_is_integer(code) && json_integer_value(code) > 0 && json_integer_value(code) < 1000
			? (int)json_integer_value(code)
			: 0,
	    .reason = str(obj, "reason"),
	    .message = str(obj, "message"),
	    .retry_after_s = json_is_integer(ra) && json_integer_value(ra) > 0 && json_integer_value(ra) < 86400
				 ? (int)json_integer_value(ra)
				 : 0,
	};
	return 0;
}

/* "resourceslices.resource.k8s.io" (or "nodes" in the core group), with "/status" for a subresource */
static void resource_name(const struct kapi_what *w, char *buf, size_t size)
{
	const struct kapi_resource *r = w->res;

	snprintf(buf, size, "%s%s%s%s%s", r->resource, w->subresource ? "/" : "", w->subresource ? w->subresource : "",
		 *r->group ? "." : "", r->group);
}

void kapi_what_name(const struct kapi_what *w, char *buf, size_t size)
{
	char res[256];

	resource_name(w, res, sizeof(res));
	if (w->name)
		snprintf(buf, size, "%s %s%s%s", res, w->ns ? w->ns : "", w->ns ? "/" : "", w->name);
	else if (w->ns)
		snprintf(buf, size, "%s in namespace %s", res, w->ns);
	else
		snprintf(buf, size, "%s at cluster scope", res);
}

/* The server's text as a message may hold it: printable ASCII, cut at 300 bytes. */
static void quote(const char *s, size_t len, char *buf, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 4 < size && n < 300; i++)
		buf[n++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : ' ';
	if (n == 300 && len > 300)
		n += (size_t)snprintf(buf + n, size - n, "...");
	buf[MIN(n, size - 1)] = '\0';
}

static int error_words(const struct kapi_what *w, int code, const char *reason, const char *message, size_t mlen,
		       struct gerr *err)
{
	int e = kapi_status_errno(code, reason);
	char obj[512], msg[400];

	kapi_what_name(w, obj, sizeof(obj));
	quote(message, mlen, msg, sizeof(msg));
	if (code == 403) {
		char res[256];

		snprintf(res, sizeof(res), "%s%s%s", w->res->resource, w->subresource ? "/" : "",
			 w->subresource ? w->subresource : "");
		return gerr_set(err, e,
				"cannot %s %s: RBAC needs {apiGroups: [\"%s\"], resources: [%s], verbs: [%s]}%s%s "
				"(server: %s)",
				w->verb, obj, w->res->group, res, w->verb,
				w->ns && w->res->namespaced ? " in namespace " : "",
				w->ns && w->res->namespaced ? w->ns : "", msg);
	}
	if (code == 401)
		return gerr_set(err, e,
				"cannot %s %s: the API server does not accept our credentials (401 Unauthorized: %s); "
				"the token was re-read once: check the service account token or the kubeconfig's user",
				w->verb, obj, msg);
	return gerr_set(err, e, "cannot %s %s: %s (%s%sHTTP %d)", w->verb, obj, *msg ? msg : "no message",
			reason && *reason ? reason : "", reason && *reason ? ", " : "", code);
}

int kapi_http_error(const struct kapi_what *w, long http_code, const char *body, size_t len, struct gerr *err)
{
	json_t *obj = body && len ? json_loadb(body, len, 0, NULL) : NULL;
	struct kapi_status st;
	int r;

	if (obj && kapi_status_decode(obj, &st) == 0)
		r = error_words(w, (int)http_code, st.reason, st.message, strlen(st.message), err);
	else
		r = error_words(w, (int)http_code, NULL, body ? body : "", body ? len : 0, err);
	json_decref(obj);
	return r;
}

int kapi_status_error(const struct kapi_what *w, const json_t *status, struct gerr *err)
{
	struct kapi_status st;

	if (kapi_status_decode(status, &st) < 0)
		return gerr_set(err, EBADMSG, "watch ERROR event without a Status object");
	return error_words(w, st.code, st.reason, st.message, strlen(st.message), err);
}
