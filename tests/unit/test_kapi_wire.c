/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kapi's wire side without a server: the watch event stream decoder (framing, bounds, bad input),
 * Status objects and the words of errors (the RBAC rule of a 403), request paths, the token bucket.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kapi/bucket.h"
#include "kapi/wire.h"

/* -- the event stream ------------------------------------------------------------------------ */

struct seen {
	char log[4096]; /* "TYPE:name:rv " per event */
	int n;
	int fail_at; /* return -EIO at this event (1-based), 0: never */
};

static int collect(enum kapi_event_type type, json_t *obj, void *userdata)
{
	static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
	struct seen *s = userdata;
	json_t *meta = json_object_get(obj, "metadata");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
	size_t len = strlen(s->log);

	if (++s->n == s->fail_at)
		return -EIO;
	snprintf(s->log + len, sizeof(s->log) - len, "%s:%s:%s ", names[type], name ? name : "-", rv ? rv : "-");
	return 0;
}

/* What a kube-apiserver writes: one object per line (Go's json.Encoder), strings with braces and escapes. */
static const char stream[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"10\","
    "\"annotations\":{\"x\":\"{\\\"not\\\": [\\\"a brace\\\"}\\\\\"}}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"11\"},\"a\":[[],{}]}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"resourceVersion\":\"15\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"16\"}}}\n";
static const char want[] = "ADDED:n1:10 MODIFIED:n1:11 BOOKMARK:-:15 DELETED:n1:16 ";

static void test_stream_whole_and_split(void **state)
{
	size_t len = strlen(stream);

	/* one piece, then every split point into two pieces, then one byte at a time */
	for (size_t cut = 0; cut <= len; cut++) {
		struct kapi_stream s;
		struct seen seen = {0};

		kapi_stream_init(&s, 4096);
		assert_int_equal(kapi_stream_feed(&s, stream, cut, collect, &seen, NULL), 0);
		assert_int_equal(kapi_stream_feed(&s, stream + cut, len - cut, collect, &seen, NULL), 0);
		assert_string_equal(seen.log, want);
		assert_false(kapi_stream_pending(&s));
		kapi_stream_done(&s);
	}
	struct kapi_stream s;
	struct seen seen = {0};

	kapi_stream_init(&s, 4096);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(kapi_stream_feed(&s, stream + i, 1, collect, &seen, NULL), 0);
	assert_string_equal(seen.log, want);
	assert_int_equal(s.events, 4);
	kapi_stream_done(&s);
}

/* no newline between events, white space around them: framed by the JSON itself */
static void test_stream_framing(void **state)
{
	const char text[] = " \r\n{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}"
			    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\"}}}\t\n"
			    "{\"type\":\"FUTURE\",\"object\":{}}\n{\"type\":\"ADDED\",\"object\":{\"metadata\":";
	struct kapi_stream s;
	struct seen seen = {0};

	kapi_stream_init(&s, 4096);
	assert_int_equal(kapi_stream_feed(&s, text, strlen(text), collect, &seen, NULL), 0);
	assert_string_equal(seen.log, "ADDED:a:- ADDED:b:- ");
	assert_int_equal(s.skipped, 1);       /* an event type from a newer server is skipped */
	assert_true(kapi_stream_pending(&s)); /* the last one is unfinished */
	kapi_stream_done(&s);
}

static void test_stream_bounded(void **state)
{
	char big[600];
	struct kapi_stream s;
	struct seen seen = {0};
	struct gerr err = {0};
	int n = snprintf(big, sizeof(big), "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"%0400d\"}}}", 0);

	/* exactly max fits, in one piece and in many */
	kapi_stream_init(&s, (size_t)n);
	assert_int_equal(kapi_stream_feed(&s, big, (size_t)n, collect, &seen, NULL), 0);
	for (int i = 0; i < n; i += 7)
		assert_int_equal(kapi_stream_feed(&s, big + i, (size_t)(i + 7 <= n ? 7 : n - i), collect, &seen, NULL),
				 0);
	assert_int_equal(seen.n, 2);
	kapi_stream_done(&s);
	/* one byte more is an error, whether it comes whole or a piece at a time, and nothing grows past max */
	kapi_stream_init(&s, (size_t)n - 1);
	assert_int_equal(kapi_stream_feed(&s, big, (size_t)n, collect, &seen, &err), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "larger than"));
	kapi_stream_done(&s);
	kapi_stream_init(&s, (size_t)n - 1);
	int r = 0;
	for (int i = 0; i < n && r == 0; i += 3)
		r = kapi_stream_feed(&s, big + i, (size_t)(i + 3 <= n ? 3 : n - i), collect, &seen, &err);
	assert_int_equal(r, -EMSGSIZE);
	assert_true(s.cap <= (size_t)n - 1);
	kapi_stream_done(&s);
}

static void test_stream_bad(void **state)
{
	static const char *const bad[] = {
	    "[1,2]",
	    "x{}",
	    "{\"type\":\"ADDED\"}",
	    "{\"type\":1,\"object\":{}}",
	    "{\"type\":\"ADDED\",\"object\":[]}",
	    "{\"type\":\"ADDED\",\"object\":{]}",
	    "{\"a\":\"\\\"}\"} }",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kapi_stream s;
		struct seen seen = {0};
		struct gerr err = {0};
		int r;

		kapi_stream_init(&s, 4096);
		r = kapi_stream_feed(&s, bad[i], strlen(bad[i]), collect, &seen, &err);
		if (r != -EBADMSG)
			fail_msg("\"%s\": %d", bad[i], r);
		assert_int_equal(seen.n, 0);
		kapi_stream_done(&s);
	}
	/* the callback's error stops the feed */
	struct kapi_stream s;
	struct seen seen = {.fail_at = 2};

	kapi_stream_init(&s, 4096);
	assert_int_equal(kapi_stream_feed(&s, stream, strlen(stream), collect, &seen, NULL), -EIO);
	assert_int_equal(seen.n, 2);
	kapi_stream_done(&s);
}

/* -- Status and errors ----------------------------------------------------------------------- */

static void test_status_errno(void **state)
{
	assert_int_equal(kapi_status_errno(404, "NotFound"), ENOENT);
	assert_int_equal(kapi_status_errno(409, "AlreadyExists"), EEXIST);
	assert_int_equal(kapi_status_errno(409, "Conflict"), ESTALE);
	assert_int_equal(kapi_status_errno(410, "Expired"), ETIME);
	assert_int_equal(kapi_status_errno(500, "Expired"), ETIME); /* a watch ERROR's reason without a code */
	assert_int_equal(kapi_status_errno(410, ""), ETIME);
	assert_int_equal(kapi_status_errno(403, "Forbidden"), EACCES);
	assert_int_equal(kapi_status_errno(401, NULL), EKEYREJECTED);
	assert_int_equal(kapi_status_errno(422, "Invalid"), EINVAL);
	assert_int_equal(kapi_status_errno(429, "TooManyRequests"), EBUSY);
	assert_int_equal(kapi_status_errno(503, NULL), EAGAIN);
	assert_int_equal(kapi_status_errno(502, NULL), EIO);
	assert_int_equal(kapi_status_errno(418, NULL), EPROTO);
}

static void test_status_decode(void **state)
{
	json_t *o =
	    json_loads("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"too old "
		       "resource version: 5 (10)\",\"reason\":\"Expired\",\"code\":410,"
		       "\"details\":{\"retryAfterSeconds\":3}}",
		       0, NULL);
	struct kapi_status st;

	assert_int_equal(kapi_status_decode(o, &st), 0);
	assert_int_equal(st.code, 410);
	assert_string_equal(st.reason, "Expired");
	assert_string_equal(st.message, "too old resource version: 5 (10)");
	assert_int_equal(st.retry_after_s, 3);
	json_decref(o);
	o = json_loads("{\"kind\":\"Node\",\"code\":410}", 0, NULL);
	assert_int_equal(kapi_status_decode(o, &st), -EBADMSG);
	json_decref(o);
	o = json_loads("{\"kind\":\"Status\",\"code\":\"x\",\"reason\":7}", 0, NULL);
	assert_int_equal(kapi_status_decode(o, &st), 0);
	assert_int_equal(st.code, 0);
	assert_string_equal(st.reason, "");
	json_decref(o);
}

/* The server's words for a 403 (apiserver responsewriters/errors.go forbiddenMessage), and ours. */
static void test_forbidden_rbac(void **state)
{
	const char body[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
			    "\"resourceslices.resource.k8s.io is forbidden: User \\\"system:serviceaccount:gpu:dra\\\" "
			    "cannot list resource \\\"resourceslices\\\" in API group \\\"resource.k8s.io\\\" at the "
			    "cluster scope\",\"reason\":\"Forbidden\",\"details\":{\"group\":\"resource.k8s.io\","
			    "\"kind\":\"resourceslices\"},\"code\":403}";
	struct kapi_what list = {.verb = "list", .res = &kapi_resourceslices};
	struct kapi_what patch = {.verb = "patch", .res = &kapi_nodes, .name = "gpu-1", .subresource = "status"};
	struct kapi_what cm = {.verb = "get", .res = &kapi_configmaps, .ns = "gpu", .name = "cfg"};
	struct gerr err = {0};

	assert_int_equal(kapi_http_error(&list, 403, body, strlen(body), &err), -EACCES);
	assert_non_null(strstr(err.msg,
			       "cannot list resourceslices.resource.k8s.io at cluster scope: RBAC needs "
			       "{apiGroups: [\"resource.k8s.io\"], resources: [resourceslices], verbs: [list]}"));
	assert_non_null(strstr(err.msg, "User \"system:serviceaccount:gpu:dra\" cannot list"));
	assert_int_equal(kapi_http_error(&patch, 403, NULL, 0, &err), -EACCES);
	assert_non_null(strstr(err.msg, "cannot patch nodes/status gpu-1: RBAC needs {apiGroups: [\"\"], resources: "
					"[nodes/status], verbs: [patch]}"));
	assert_int_equal(kapi_http_error(&cm, 403, "forbidden\n", 10, &err), -EACCES);
	assert_non_null(strstr(err.msg, "verbs: [get]} in namespace gpu"));
}

static void test_error_words(void **state)
{
	const char conflict[] =
	    "{\"kind\":\"Status\",\"message\":\"Operation cannot be fulfilled on nodes \\\"n\\\": the "
	    "object has been modified\",\"reason\":\"Conflict\",\"code\":409}";
	struct kapi_what upd = {.verb = "update", .res = &kapi_nodes, .name = "n"};
	struct kapi_what get = {.verb = "get", .res = &kapi_resourceclaims, .ns = "default", .name = "claim"};
	char junk[1000];
	struct gerr err = {0};

	assert_int_equal(kapi_http_error(&upd, 409, conflict, strlen(conflict), &err), -ESTALE);
	assert_string_equal(err.msg, "cannot update nodes n: Operation cannot be fulfilled on nodes \"n\": the object "
				     "has been modified (Conflict, HTTP 409)");
	assert_int_equal(kapi_http_error(&get, 404, NULL, 0, &err), -ENOENT);
	assert_string_equal(err.msg, "cannot get resourceclaims.resource.k8s.io default/claim: no message (HTTP 404)");
	/* a body that is not a Status (a proxy's page): quoted, control characters dropped, cut */
	memset(junk, 'x', sizeof(junk));
	junk[3] = '\n';
	junk[4] = '\033';
	assert_int_equal(kapi_http_error(&upd, 502, junk, sizeof(junk), &err), -EIO);
	assert_null(strchr(err.msg, '\n'));
	assert_null(strchr(err.msg, '\033'));
	assert_non_null(strstr(err.msg, "xxx..."));
	assert_true(strlen(err.msg) < 400);
	/* a watch ERROR event */
	json_t *st =
	    json_loads("{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410,\"message\":\"too old\"}", 0, NULL);
	struct kapi_what w = {.verb = "watch", .res = &kapi_pods, .ns = "ns1"};
	assert_int_equal(kapi_status_error(&w, st, &err), -ETIME);
	assert_string_equal(err.msg, "cannot watch pods in namespace ns1: too old (Expired, HTTP 410)");
	json_decref(st);
}

/* -- paths ----------------------------------------------------------------------------------- */

static void test_paths(void **state)
{
	char *p = NULL;
	struct gerr err = {0};

	assert_int_equal(kapi_path(&kapi_nodes, NULL, NULL, NULL, &p, NULL), 0);
	assert_string_equal(p, "/api/v1/nodes");
	free(p);
	assert_int_equal(kapi_path(&kapi_nodes, NULL, "gpu-1", "status", &p, NULL), 0);
	assert_string_equal(p, "/api/v1/nodes/gpu-1/status");
	free(p);
	assert_int_equal(kapi_path(&kapi_resourceclaims, "team a", "c:1", NULL, &p, NULL), 0);
	assert_string_equal(p, "/apis/resource.k8s.io/v1/namespaces/team%20a/resourceclaims/c%3A1");
	free(p);
	assert_int_equal(kapi_path(&kapi_nodefeatures, "gpu", NULL, NULL, &p, NULL), 0);
	assert_string_equal(p, "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/gpu/nodefeatures");
	free(p);
	p = NULL;
	assert_int_equal(kapi_path(&kapi_pods, NULL, "..", NULL, &p, &err), -EINVAL);
	assert_int_equal(kapi_path(&kapi_pods, "..", "x", NULL, &p, &err), -EINVAL);
	assert_int_equal(kapi_path(&kapi_pods, "a", "x/y", NULL, &p, &err), -EINVAL);
	assert_int_equal(kapi_path(&kapi_pods, "", "x", NULL, &p, &err), -EINVAL);
	assert_int_equal(kapi_path(&kapi_nodes, "default", "x", NULL, &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "cluster-scoped"));
	assert_int_equal(kapi_path(&kapi_nodes, NULL, NULL, "status", &p, &err), -EINVAL);
	assert_null(p);

	char *url = strdup("https://h/api/v1/pods");
	assert_int_equal(kapi_query_add(&url, "fieldSelector", "spec.nodeName=gpu-1,status.phase!=Failed"), 0);
	assert_int_equal(kapi_query_add(&url, "labelSelector", "a in (x, y)"), 0);
	assert_string_equal(url, "https://h/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-1%2Cstatus.phase%21%3DFailed"
				 "&labelSelector=a%20in%20%28x%2C%20y%29");
	free(url);
}

/* -- the token bucket ------------------------------------------------------------------------ */

#define MS 1000000LL

static void test_bucket_defaults(void **state)
{
	struct kapi_bucket b;

	kapi_bucket_init(&b, 0, 0, 0); /* client-go: QPS 5, burst 10 */
	for (int i = 0; i < 10; i++)
		assert_int_equal(kapi_bucket_take(&b, 0), 0);
	/* then one every 200 ms: the 11th waits 200 ms, the 12th 400 ms */
	assert_int_equal(kapi_bucket_take(&b, 0), 200 * MS);
	assert_int_equal(kapi_bucket_take(&b, 0), 400 * MS);
	/* at t = 400 ms both promised slots are used up: the next waits 200 ms */
	assert_int_equal(kapi_bucket_take(&b, 400 * MS), 200 * MS);
	/* a long idle refills to burst and no more */
	for (int i = 0; i < 10; i++)
		assert_int_equal(kapi_bucket_take(&b, 100000 * MS), 0);
	assert_int_equal(kapi_bucket_take(&b, 100000 * MS), 200 * MS);
}

static void test_bucket_rates(void **state)
{
	struct kapi_bucket b;
	int64_t now = 0;
	int sent = 0;

	kapi_bucket_init(&b, 50, 1, 0);
	assert_int_equal(kapi_bucket_take(&b, 0), 0);
	assert_int_equal(kapi_bucket_take(&b, 0), 20 * MS);
	/* requests that each wait their turn: 50 per second in the long run */
	kapi_bucket_init(&b, 50, 5, 0);
	while (now < 10000 * MS) {
		now += kapi_bucket_take(&b, now);
		sent++;
	}
	assert_in_range(sent, 500, 506);
	/* negative QPS: no limit (client-go rest.Config) */
	kapi_bucket_init(&b, -1, 0, 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(kapi_bucket_take(&b, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stream_whole_and_split),
	    cmocka_unit_test(test_stream_framing),
	    cmocka_unit_test(test_stream_bounded),
	    cmocka_unit_test(test_stream_bad),
	    cmocka_unit_test(test_status_errno),
	    cmocka_unit_test(test_status_decode),
	    cmocka_unit_test(test_forbidden_rbac),
	    cmocka_unit_test(test_error_words),
	    cmocka_unit_test(test_paths),
	    cmocka_unit_test(test_bucket_defaults),
	    cmocka_unit_test(test_bucket_rates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
