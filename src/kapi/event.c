/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One core/v1 Event about an object (kapi.h kapi_event_create()), as client-go's event recorder
 * writes it (docs/reference/kube-api.md §7): what `kubectl describe` lists under Events.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kapi/kapi.h"

void kapi_time_format(time_t t, char *buf, size_t size)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int kapi_event_create(struct kapi *k, const struct kapi_event *e, struct gerr *err)
{
	const struct kapi_resource *r = e->resource;
	/* a cluster-scoped object's events live in "default" (the API refuses another namespace then) */
	const char *ns = r->namespaced ? e->ns : "default";
	const char *host = e->host ? e->host : "";
	char name[320], at[KAPI_TIME_MAX], api_version[128];
	struct timespec ts;
	json_t *obj, *involved;
	int ret;

	clock_gettime(CLOCK_REALTIME, &ts);
	kapi_time_format(e->at ? e->at : ts.tv_sec, at, sizeof(at));
	/* client-go: <object name>.<unix nanoseconds in hex> */
	snprintf(name, sizeof(name), "%.236s.%llx", e->name,
		 (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec);
	snprintf(api_version, sizeof(api_version), "%s%s%s", r->group, r->group[0] ? "/" : "", r->version);
	involved = json_pack("{s:s, s:s, s:s}", "kind", r->kind, "apiVersion", api_version, "name", e->name);
	if (involved && e->uid && e->uid[0] && json_object_set_new(involved, "uid", json_string(e->uid)) < 0)
		json_decref(TAKE_PTR(involved));
	if (involved && r->namespaced && json_object_set_new(involved, "namespace", json_string(ns)) < 0)
		json_decref(TAKE_PTR(involved));
	obj = !involved
		  ? NULL
		  : json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:i, s:s, s:s}",
			      "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace", ns,
			      "involvedObject", involved, "type", e->type, "reason", e->reason, "message", e->message,
			      "source", "component", e->component, "host", host, "firstTimestamp", at, "lastTimestamp",
			      at, "count", 1, "reportingComponent", e->component, "reportingInstance", host);
	if (!obj)
		return gerr_set(err, ENOMEM, "out of memory");
	ret = kapi_create(k, &kapi_events, ns, obj, NULL, err);
	json_decref(obj);
	return ret;
}
