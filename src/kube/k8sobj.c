/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "util/fileio.h"
#include "kube/k8sobj.h"

#define K8S_MAX_FILE    (32u << 20)
#define K8S_MAX_DEPTH   64
#define K8S_MAX_ANCHORS 256

struct reader {
	yaml_parser_t p;
	const char *name;
	struct gerr *err;
	struct {
		char *name;
		json_t *v;
	} anchors[K8S_MAX_ANCHORS];
	size_t n_anchors;
};

static int rerr(struct reader *r, const yaml_mark_t *m, const char *what)
{
	return gerr_set(r->err, EINVAL, "%s:%zu:%zu: %s", r->name, m->line + 1, m->column + 1, what);
}

static int next(struct reader *r, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&r->p, ev))
		return gerr_set(r->err, EINVAL, "%s:%zu:%zu: %s", r->name, r->p.problem_mark.line + 1,
				r->p.problem_mark.column + 1, r->p.problem ? r->p.problem : "YAML syntax error");
	return 0;
}

/* YAML 1.1-ish typing of plain scalars, as Kubernetes' sigs.k8s.io/yaml (via JSON) sees them. */
static json_t *scalar(const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	char *end;

	if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_stringn(s, n);
	if (!n || streq(s, "~") || streq(s, "null") || streq(s, "Null") || streq(s, "NULL"))
		return json_null();
	if (streq(s, "true") || streq(s, "True") || streq(s, "TRUE"))
		return json_true();
	if (streq(s, "false") || streq(s, "False") || streq(s, "FALSE"))
		return json_false();
	if ((s[0] >= '0' && s[0] <= '9') || ((s[0] == '-' || s[0] == '+') && n > 1)) {
		long long i;
		double d;

		errno = 0;
		i = strtoll(s, &end, 10);
		if (!*end && !errno)
			return json_integer(i);
		d = strtod(s, &end);
		if (!*end && strpbrk(s, ".eE") && !strpbrk(s, "xX"))
			return json_real(d);
	}
	return json_stringn(s, n);
}

static int remember(struct reader *r, const yaml_char_t *anchor, json_t *v)
{
	if (!anchor)
		return 0;
	if (r->n_anchors == K8S_MAX_ANCHORS)
		return gerr_set(r->err, E2BIG, "%s: more than %d YAML anchors", r->name, K8S_MAX_ANCHORS);
	r->anchors[r->n_anchors].name = strdup((const char *)anchor);
	if (!r->anchors[r->n_anchors].name)
		return -ENOMEM;
	r->anchors[r->n_anchors++].v = json_incref(v);
	return 0;
}

static int node(struct reader *r, yaml_event_t *ev, unsigned depth, json_t **ret);

static int collection(struct reader *r, yaml_event_t *start, unsigned depth, json_t **ret)
{
	bool map = start->type == YAML_MAPPING_START_EVENT;
	json_t *c = map ? json_object() : json_array();
	int rc;

	if (!c)
		return -ENOMEM;
	for (;;) {
		yaml_event_t ev;
		json_t *key = NULL, *val = NULL;

		rc = next(r, &ev);
		if (rc < 0)
			break;
		if (ev.type == (map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT)) {
			yaml_event_delete(&ev);
			*ret = c;
			return 0;
		}
		if (map) {
			rc = node(r, &ev, depth + 1, &key);
			if (rc >= 0 && !json_is_string(key)) {
				char buf[64];
				char *k = json_dumps(key, JSON_ENCODE_ANY);

				snprintf(buf, sizeof(buf), "%s", k ? k : "?");
				free(k);
				json_decref(key);
				key = json_string(buf); /* JSON keys are strings: 1 → "1" */
			}
			if (rc >= 0)
				rc = next(r, &ev);
			if (rc >= 0)
				rc = node(r, &ev, depth + 1, &val);
			if (rc >= 0 && json_object_set_new(c, json_string_value(key), val) < 0)
				rc = -ENOMEM;
			json_decref(key);
		} else {
			rc = node(r, &ev, depth + 1, &val);
			if (rc >= 0 && json_array_append_new(c, val) < 0)
				rc = -ENOMEM;
		}
		if (rc < 0)
			break;
	}
	json_decref(c);
	return rc;
}

/* Consumes ev. *ret is written only on success (on failure the value built so far is dropped). */
static int node(struct reader *r, yaml_event_t *ev, unsigned depth, json_t **ret)
{
	json_t *v = NULL;
	int rc = 0;

	if (depth > K8S_MAX_DEPTH) {
		rc = rerr(r, &ev->start_mark, "nested too deep");
	} else if (ev->type == YAML_SCALAR_EVENT) {
		v = scalar(ev);
		rc = v ? remember(r, ev->data.scalar.anchor, v) : -ENOMEM;
	} else if (ev->type == YAML_ALIAS_EVENT) {
		/* YAML: an alias refers to the most recent node with that anchor, so search from the end */
		rc = rerr(r, &ev->start_mark, "unknown alias");
		for (size_t k = r->n_anchors; k-- > 0;)
			if (streq(r->anchors[k].name, (const char *)ev->data.alias.anchor)) {
				v = json_deep_copy(r->anchors[k].v);
				rc = v ? 0 : -ENOMEM;
				break;
			}
	} else if (ev->type == YAML_MAPPING_START_EVENT || ev->type == YAML_SEQUENCE_START_EVENT) {
		const yaml_char_t *anchor = ev->type == YAML_MAPPING_START_EVENT ? ev->data.mapping_start.anchor
										 : ev->data.sequence_start.anchor;

		rc = collection(r, ev, depth, &v);
		if (rc >= 0)
			rc = remember(r, anchor, v);
	} else {
		rc = rerr(r, &ev->start_mark, "unexpected YAML event");
	}
	yaml_event_delete(ev);
	if (rc < 0) {
		json_decref(v);
		return rc;
	}
	*ret = v;
	return rc;
}

static int add_object(json_t *out, json_t *doc)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	json_t *items = json_object_get(doc, "items");

	if (json_is_null(doc))
		return 0; /* empty document between --- */
	if (kind && strlen(kind) >= 4 && streq(kind + strlen(kind) - 4, "List") && json_is_array(items))
		return json_array_extend(out, items);
	return json_array_append(out, doc);
}

int k8sobj_parse(const char *name, const char *text, size_t len, json_t **ret, struct gerr *err)
{
	struct reader r = {.name = name, .err = err};
	json_t *out = json_array();
	int rc = 0;

	if (!out || !yaml_parser_initialize(&r.p)) {
		json_decref(out);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&r.p, (const unsigned char *)text, len);
	for (bool done = false; !done && rc >= 0;) {
		yaml_event_t ev;

		rc = next(&r, &ev);
		if (rc < 0)
			break;
		if (ev.type == YAML_STREAM_END_EVENT) {
			done = true;
			yaml_event_delete(&ev);
		} else if (ev.type == YAML_DOCUMENT_START_EVENT) {
			json_t *doc = NULL;

			yaml_event_delete(&ev);
			rc = next(&r, &ev);
			if (rc >= 0)
				rc = node(&r, &ev, 0, &doc);
			if (rc >= 0 && add_object(out, doc) < 0)
				rc = -ENOMEM;
			json_decref(doc);
			if (rc >= 0)
				rc = next(&r, &ev); /* DOCUMENT-END */
			if (rc >= 0)
				yaml_event_delete(&ev);
		} else {
			yaml_event_delete(&ev); /* STREAM-START */
		}
	}
	yaml_parser_delete(&r.p);
	for (size_t k = 0; k < r.n_anchors; k++) {
		free(r.anchors[k].name);
		json_decref(r.anchors[k].v);
	}
	if (rc < 0) {
		json_decref(out);
		return rc;
	}
	*ret = out;
	return 0;
}

int k8sobj_load(const char *path, json_t **ret, struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	if (streq(path, "-")) {
		size_t cap = 0;

		for (;;) {
			size_t n;

			if (len + 4096 > cap) {
				char *nt = cap < K8S_MAX_FILE ? realloc(text, cap + 65536) : NULL;

				if (!nt)
					return gerr_set(err, EFBIG, "stdin: more than %u bytes", K8S_MAX_FILE);
				text = nt;
				cap += 65536;
			}
			n = fread(text + len, 1, cap - len - 1, stdin);
			len += n;
			if (n == 0)
				break;
		}
		if (!text)
			return -ENOMEM;
		text[len] = '\0';
	} else {
		r = read_file(path, K8S_MAX_FILE, &text, &len, err);
		if (r < 0)
			return r;
	}
	return k8sobj_parse(streq(path, "-") ? "<stdin>" : path, text, len, ret, err);
}

json_t *k8sobj_pod_spec(const json_t *obj)
{
	static const struct {
		const char *kind;
		const char *path[6];
	} kinds[] = {
	    {"Pod", {"spec"}},
	    {"Deployment", {"spec", "template", "spec"}},
	    {"StatefulSet", {"spec", "template", "spec"}},
	    {"DaemonSet", {"spec", "template", "spec"}},
	    {"ReplicaSet", {"spec", "template", "spec"}},
	    {"ReplicationController", {"spec", "template", "spec"}},
	    {"Job", {"spec", "template", "spec"}},
	    {"CronJob", {"spec", "jobTemplate", "spec", "template", "spec"}},
	};
	const char *kind = json_string_value(json_object_get(obj, "kind"));

	for (size_t k = 0; kind && k < ELEMENTSOF(kinds); k++) {
		json_t *v = (json_t *)obj;

		if (!streq(kind, kinds[k].kind))
			continue;
		for (size_t i = 0; v && i < ELEMENTSOF(kinds[k].path) && kinds[k].path[i]; i++)
			v = json_object_get(v, kinds[k].path[i]);
		return json_is_object(v) ? v : NULL;
	}
	return NULL;
}
