/* SPDX-License-Identifier: Apache-2.0 */
/* Pod UIDs and labels from a watch of this node's pods; see podmeta.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/podmeta.h"
#include "kapi/kapi.h"
#include "util/macro.h"
#include "util/prom.h"

#define ALLOWLIST_MAX 64

/*
 * A pattern Go's RE2 and POSIX ERE read differently, or NULL. RE2 (its syntax doc) and glibc's regcomp
 * agree on literals, '.', bracket expressions without escapes, anchors, alternation, groups and greedy
 * repeats, and on the GNU escapes \w \W \s \S \b \B; they differ on \d and other letter escapes, flag
 * and non-capturing groups "(?", lazy repeats ("*?": ERE reads an optional repeat), an escape inside
 * brackets (POSIX: a literal backslash), and "" (RE2: every key; regcomp: an error).
 */
static const char *re2_only(const char *p)
{
	bool in_brackets = false;

	if (!*p)
		return "an empty pattern (every key): leave the option out to keep every label";
	for (const char *c = p; *c; c++) {
		if (in_brackets) {
			if (*c == '\\')
				return "an escape inside [...] (POSIX reads it as a backslash)";
			if (*c == ']' && c[-1] != '[' && !(c[-1] == '^' && c[-2] == '['))
				in_brackets = false;
			continue;
		}
		if (*c == '[') {
			in_brackets = true;
			if (c[1] == '^')
				c++;
			if (c[1] == ']')
				c++; /* a leading ']' is a member */
			continue;
		}
		if (*c == '\\') {
			if (!c[1])
				return "a trailing backslash";
			if (isalnum((unsigned char)c[1]) && !strchr("wWsSbB", c[1]))
				return "an escape RE2 and POSIX read differently (\\d: write [0-9])";
			c++;
			continue;
		}
		if (*c == '(' && c[1] == '?')
			return "a (?...) group (flags, non-capturing)";
		if (strchr("*+?}", *c) && c[1] == '?')
			return "a lazy repeat (*?, +?, ??, {n}?)";
	}
	return NULL;
}

int exp_allowlist_compile(const char *const *patterns, size_t n, struct exp_allowlist *ret, struct gerr *err)
{
	struct exp_allowlist a = {0};

	*ret = (struct exp_allowlist){0};
	if (!n)
		return 0;
	if (n > ALLOWLIST_MAX)
		return gerr_set(err, EINVAL, "%zu patterns, at most %d", n, ALLOWLIST_MAX);
	a.re = calloc(n, sizeof(*a.re));
	if (!a.re)
		return gerr_set(err, ENOMEM, "out of memory");
	for (; a.n < n; a.n++) {
		const char *why = re2_only(patterns[a.n]);
		char msg[128];
		int r;

		if (why) {
			exp_allowlist_free(&a);
			return gerr_set(err, EINVAL, "'%s': %s", patterns[a.n], why);
		}
		r = regcomp(&a.re[a.n], patterns[a.n], REG_EXTENDED | REG_NOSUB);
		if (r != 0) {
			regerror(r, NULL, msg, sizeof(msg));
			exp_allowlist_free(&a);
			return gerr_set(err, EINVAL, "'%s': %s", patterns[a.n], msg);
		}
	}
	*ret = a;
	return 0;
}

void exp_allowlist_free(struct exp_allowlist *a)
{
	for (size_t i = 0; i < a->n; i++)
		regfree(&a->re[i]);
	free(a->re);
	*a = (struct exp_allowlist){0};
}

bool exp_allowlist_match(const struct exp_allowlist *a, const char *key)
{
	if (!a || !a->n)
		return true;
	for (size_t i = 0; i < a->n; i++)
		if (regexec(&a->re[i], key, 0, NULL, 0) == 0)
			return true;
	return false;
}

/*
 * Label names gpulet writes itself on some series (exporter.c, render.c, hpc.c, health_status.c): a pod
 * label of one of these names would make a series with the name twice, which Prometheus refuses.
 */
static const char *const own_labels[] = {
    "gpu",
    "UUID",
    "uuid",
    "pci_bus_id",
    "device",
    "modelName",
    "Hostname",
    "pod",
    "namespace",
    "container",
    "pod_name",
    "pod_namespace",
    "container_name",
    "pod_uid",
    "vgpu",
    "hpc_job",
    "GPU_I_PROFILE",
    "GPU_I_ID",
    "GPU_CI_ID",
    "err_code",
    "err_msg",
    "xid",
    "window_size_in_ms",
    "clock_event",
    "peer_gpu",
    "link_status",
    "health_watch",
    "health_error_code",
    "resource",
    "condition",
    "field",
    "reason",
};

bool exp_pod_label_name(const char *key, char *out, size_t size)
{
	size_t o = 0;

	if (!*key || size < 2)
		return false;
	if (isdigit((unsigned char)key[0]))
		out[o++] = '_';
	for (const char *c = key; *c; c++) {
		if (o + 1 >= size)
			return false;
		out[o++] = isalnum((unsigned char)*c) && isascii((unsigned char)*c) ? *c : '_';
	}
	out[o] = '\0';
	if (strncmp(out, "DCGM_", 5) == 0 || strncmp(out, "__", 2) == 0)
		return false; /* the field labels (DCGM_FI_DRIVER_VERSION, ...) and Prometheus' reserved names */
	for (size_t i = 0; i < ELEMENTSOF(own_labels); i++)
		if (streq(out, own_labels[i]))
			return false;
	return true;
}

static void pod_clear(struct exp_pod *p)
{
	free(p->ns);
	free(p->name);
	free(p->uid);
	free(p->labels);
}

static void pods_free(struct exp_pod *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pod_clear(&v[i]);
	free(v);
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

#define LABEL_NAME_MAX 320 /* a Prometheus name made of a label key (at most 317 characters) */

/* ,name="value" of the allowed labels, keys in sorted order; a name seen twice keeps the first. */
static char *pod_labels(const json_t *labels, const struct exp_allowlist *allow)
{
	size_t n = json_is_object(labels) ? json_object_size(labels) : 0, len = 0, k = 0;
	_cleanup_free_ const char **keys = NULL;
	_cleanup_free_ char *names = NULL; /* n names of LABEL_NAME_MAX, "" for a key left out */
	const char *key;
	json_t *v;
	char *out;

	if (!n)
		return strdup("");
	keys = calloc(n, sizeof(*keys));
	names = calloc(n, LABEL_NAME_MAX);
	out = calloc(1, 1);
	if (!keys || !names || !out) {
		free(out);
		return NULL;
	}
	json_object_foreach ((json_t *)labels, key, v)
		if (k < n)
			keys[k++] = key;
	qsort(keys, k, sizeof(*keys), key_cmp);
	for (size_t i = 0; i < k; i++) {
		const char *s = json_string_value(json_object_get(labels, keys[i]));
		bool dup = false;
		char val[512], *grown;
		int w;

		if (!s || !exp_allowlist_match(allow, keys[i]) ||
		    !exp_pod_label_name(keys[i], &names[i * LABEL_NAME_MAX], LABEL_NAME_MAX)) {
			names[i * LABEL_NAME_MAX] = '\0';
			continue;
		}
		for (size_t j = 0; j < i && !dup; j++)
			dup = streq(&names[j * LABEL_NAME_MAX], &names[i * LABEL_NAME_MAX]);
		if (dup)
			continue;
		prom_escape(s, val, sizeof(val));
		w = snprintf(NULL, 0, ",%s=\"%s\"", &names[i * LABEL_NAME_MAX], val);
		grown = realloc(out, len + (size_t)w + 1);
		if (!grown) {
			free(out);
			return NULL;
		}
		out = grown;
		snprintf(out + len, (size_t)w + 1, ",%s=\"%s\"", &names[i * LABEL_NAME_MAX], val);
		len += (size_t)w;
	}
	return out;
}

static int pod_cmp(const void *a, const void *b)
{
	const struct exp_pod *x = a, *y = b;
	int c = strcmp(x->ns, y->ns);

	return c ? c : strcmp(x->name, y->name);
}

int exp_podmeta_set(struct exp_podmeta *pm, const json_t *list)
{
	size_t n = json_array_size(list), k = 0;
	struct exp_pod *v = calloc(n + 1, sizeof(*v)), *old;
	size_t old_n;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const json_t *meta = json_object_get(json_array_get(list, i), "metadata");
		const char *ns = json_string_value(json_object_get(meta, "namespace"));
		const char *name = json_string_value(json_object_get(meta, "name"));
		const char *uid = json_string_value(json_object_get(meta, "uid"));
		struct exp_pod *p = &v[k];

		if (!ns || !name)
			continue;
		p->ns = strdup(ns);
		p->name = strdup(name);
		p->uid = strdup(uid ? uid : "");
		p->labels = pm->labels ? pod_labels(json_object_get(meta, "labels"), pm->allow) : strdup("");
		k++;
		if (!p->ns || !p->name || !p->uid || !p->labels) {
			pods_free(v, k);
			return -ENOMEM;
		}
	}
	qsort(v, k, sizeof(*v), pod_cmp);
	pthread_mutex_lock(&pm->lock);
	old = pm->pods;
	old_n = pm->n;
	pm->pods = v;
	pm->n = k;
	pthread_mutex_unlock(&pm->lock);
	pods_free(old, old_n);
	return 0;
}

const struct exp_pod *exp_podmeta_find(const struct exp_podmeta *pm, const char *ns, const char *name)
{
	struct exp_pod key = {.ns = (char *)ns, .name = (char *)name};

	return pm && pm->n ? bsearch(&key, pm->pods, pm->n, sizeof(key), pod_cmp) : NULL;
}

const struct exp_pod *exp_podmeta_by_uid(const struct exp_podmeta *pm, const char *uid)
{
	for (size_t i = 0; pm && uid && *uid && i < pm->n; i++)
		if (streq(pm->pods[i].uid, uid))
			return &pm->pods[i];
	return NULL;
}

int exp_podmeta_start(struct exp_podmeta *pm, const struct exp_kube_options *o, struct gerr *err)
{
	_cleanup_free_ char *selector = NULL;
	struct kapi_informer_options io = {.resource = &kapi_pods};
	int r;

	memset(pm, 0, sizeof(*pm));
	pthread_mutex_init(&pm->lock, NULL);
	pm->allow = &o->allowlist;
	pm->labels = o->pod_labels;
	if (!o->node_name || !*o->node_name)
		return gerr_set(err, EINVAL,
				"NODE_NAME is not set: the pods watch is limited to this node's pods (set it from "
				"spec.nodeName, as the chart does)");
	if (asprintf(&selector, "spec.nodeName=%s", o->node_name) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	r = kapi_open(&(struct kapi_options){.kubeconfig = o->kubeconfig, .env = o->env}, &pm->api, err);
	if (r < 0)
		return r;
	io.field_selector = selector;
	r = kapi_informer_start(pm->api, &io, &pm->inf, err);
	if (r < 0)
		return gerr_prefix(err, "pods on node %s: ", o->node_name), r;
	return 0;
}

const char *exp_podmeta_server(const struct exp_podmeta *pm)
{
	return kapi_server(pm->api);
}

const char *exp_podmeta_warning(const struct exp_podmeta *pm)
{
	return kapi_warning(pm->api);
}

int exp_podmeta_fd(const struct exp_podmeta *pm)
{
	return kapi_informer_fd(pm->inf);
}

int exp_podmeta_update(struct exp_podmeta *pm, int *ret_error, char *msg, size_t size)
{
	struct kapi_informer_status st;
	_cleanup_(json_decrefp) json_t *list = NULL;
	char *key;
	json_t *obj;

	while (kapi_informer_next(pm->inf, &key, &obj) > 0) {
		free(key);
		json_decref(obj);
	}
	kapi_informer_status(pm->inf, &st);
	*ret_error = st.error;
	snprintf(msg, size, "%s", st.message);
	list = kapi_informer_list(pm->inf);
	return list ? exp_podmeta_set(pm, list) : -ENOMEM;
}

void exp_podmeta_stop(struct exp_podmeta *pm)
{
	if (!pm)
		return;
	kapi_informer_stop(pm->inf);
	kapi_close(pm->api);
	pods_free(pm->pods, pm->n);
	pm->pods = NULL;
	pm->n = 0;
	pm->inf = NULL;
	pm->api = NULL;
	pthread_mutex_destroy(&pm->lock);
}
