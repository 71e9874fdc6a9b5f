/* SPDX-License-Identifier: Apache-2.0 */
/* Reading --pods / --node: pods on this node, NVIDIA's components, the device plugin's config. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "doctor/cluster.h"
#include "doctor/kubelet_root.h"
#include "kube/k8sobj.h"
#include "util/fileio.h"
#include "util/macro.h"

static const char *meta(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

const char *cluster_pod_name(const json_t *pod)
{
	return meta(pod, "name") ?: "?";
}

const char *cluster_pod_ns(const json_t *pod)
{
	return meta(pod, "namespace") ?: "default";
}

const json_t *cluster_pod_where(const struct doctor_ctx *c, const char *obj, const char *field, const char *value)
{
	size_t i;
	json_t *pod;

	json_array_foreach (c->pods, i, pod) {
		const char *v = json_string_value(json_object_get(json_object_get(pod, obj), field));

		if (v && streq(v, value))
			return pod;
	}
	return NULL;
}

static bool pod_on(const struct doctor_ctx *c, const char *node)
{
	return cluster_pod_where(c, "spec", "nodeName", node) != NULL;
}

void cluster_find_node(struct doctor_ctx *c)
{
	_cleanup_free_ char *p = NULL, *text = NULL;
	const char *name = c->node_obj ? meta(c->node_obj, "name") : NULL;

	if (c->node_name_done)
		return;
	c->node_name_done = true;
	if (name) {
		snprintf(c->node_name, sizeof(c->node_name), "%s", name);
		return;
	}
	p = doctor_path(c, "/etc/hostname");
	if (!p || read_file(p, 4096, &text, NULL, NULL) < 0)
		return;
	text[strcspn(text, " \t\r\n")] = '\0';
	if (*text && strlen(text) < sizeof(c->node_name) && pod_on(c, text))
		snprintf(c->node_name, sizeof(c->node_name), "%s", text);
}

const char *cluster_node_name(const struct doctor_ctx *c)
{
	return c->node_name[0] ? c->node_name : NULL;
}

bool cluster_is_pod(const json_t *obj)
{
	const char *kind = json_string_value(json_object_get(obj, "kind"));

	return json_is_object(json_object_get(obj, "spec")) && (!kind || streq(kind, "Pod"));
}

bool cluster_pod_here(const struct doctor_ctx *c, const json_t *pod)
{
	const char *node = cluster_node_name(c);
	const char *on = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));

	return cluster_is_pod(pod) && (!node || !on || streq(node, on));
}

/*
 * gpu-operator assets/ and k8s-device-plugin deployments/ (docs/reference/cluster-events.md §3). Matched
 * as a part of the pod's name first (the helm chart prefixes its release name, and gives the plugin,
 * GFD and the MPS daemon one app.kubernetes.io/name), then of its app labels; the first row wins, so
 * the longer names come before "nvidia-device-plugin" and "gpu-operator".
 */
static const struct {
	const char *part;
	enum nv_component comp;
} components[] = {
    {"mps-control-daemon", NV_MPS_DAEMON},
    {"gpu-feature-discovery", NV_GFD},
    {"node-feature-discovery", NV_NFD},
    {"nfd-worker", NV_NFD},
    {"nvidia-driver-daemonset", NV_DRIVER},
    {"operator-validator", NV_VALIDATOR},
    {"cuda-validator", NV_VALIDATOR},
    {"container-toolkit", NV_TOOLKIT},
    {"nvidia-device-plugin", NV_DEVICE_PLUGIN},
    {"nvidia-gpu-device-plugin", NV_DEVICE_PLUGIN}, /* GKE's (kube-system, k8s-app=nvidia-gpu-device-plugin) */
    {"gpu-operator", NV_OPERATOR},
    {"dcgm", NV_OTHER},
    {"mig-manager", NV_OTHER},
    {"node-status-exporter", NV_OTHER},
    {"gpulet", NV_OTHER},
};

static enum nv_component component_of(const char *s)
{
	for (size_t k = 0; s && k < ELEMENTSOF(components); k++)
		if (strstr(s, components[k].part))
			return components[k].comp;
	return NV_NONE;
}

/* gpulet's chart: app.kubernetes.io/name gpulet, one app.kubernetes.io/component per DaemonSet
 * (deploy/helm/gpulet/templates), whatever the release calls the pods. */
static const struct {
	const char *component;
	enum nv_component comp;
} gpulet_components[] = {
    {"device-plugin", NV_DEVICE_PLUGIN},
    {"mps-control-daemon", NV_MPS_DAEMON},
    {"gpu-feature-discovery", NV_GFD},
};

bool cluster_is_gpulet(const json_t *pod)
{
	const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
	const char *name = json_string_value(json_object_get(labels, "app.kubernetes.io/name"));

	return name && streq(name, "gpulet");
}

enum nv_component cluster_component(const json_t *pod)
{
	const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
	enum nv_component comp;

	if (cluster_is_gpulet(pod)) {
		const char *part = json_string_value(json_object_get(labels, "app.kubernetes.io/component"));

		for (size_t k = 0; part && k < ELEMENTSOF(gpulet_components); k++)
			if (streq(part, gpulet_components[k].component))
				return gpulet_components[k].comp;
		return NV_OTHER;
	}
	comp = component_of(cluster_pod_name(pod));

	if (comp == NV_NONE)
		comp = component_of(json_string_value(json_object_get(labels, "app")));
	if (comp == NV_NONE)
		comp = component_of(json_string_value(json_object_get(labels, "app.kubernetes.io/name")));
	return comp;
}

static void add_why(char *why, size_t size, const char *what)
{
	size_t used = strlen(why);

	if (used < size && !strstr(why, what))
		snprintf(why + used, size - used, "%s%s", used ? ", " : "", what);
}

bool cluster_pod_healthy(const json_t *pod, char *why, size_t size)
{
	static const char *const lists[] = {"initContainerStatuses", "containerStatuses"};
	const json_t *st = json_object_get(pod, "status");
	const char *phase = json_string_value(json_object_get(st, "phase"));
	char buf[160];

	why[0] = '\0';
	if (phase && streq(phase, "Failed"))
		add_why(why, size, "phase Failed");
	for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
		size_t i;
		json_t *cs;

		json_array_foreach (json_object_get(st, lists[l]), i, cs) {
			const char *w = json_string_value(
			    json_object_get(json_object_get(json_object_get(cs, "state"), "waiting"), "reason"));
			const char *t = json_string_value(
			    json_object_get(json_object_get(json_object_get(cs, "lastState"), "terminated"), "reason"));
			const char *now = json_string_value(
			    json_object_get(json_object_get(json_object_get(cs, "state"), "terminated"), "reason"));
			const char *name = json_string_value(json_object_get(cs, "name")) ?: "?";

			if (w && !streq(w, "ContainerCreating") && !streq(w, "PodInitializing")) {
				snprintf(buf, sizeof(buf), "container %s %s", name, w);
				add_why(why, size, buf);
			}
			if (t && !streq(t, "Completed") &&
			    (w || json_integer_value(json_object_get(cs, "restartCount")) >= 3)) {
				snprintf(buf, sizeof(buf), "last terminated %s (%lld restarts)", t,
					 json_integer_value(json_object_get(cs, "restartCount")));
				add_why(why, size, buf);
			}
			if (now && !streq(now, "Completed")) {
				snprintf(buf, sizeof(buf), "container %s terminated %s", name, now);
				add_why(why, size, buf);
			}
		}
	}
	return !why[0];
}

const json_t *cluster_object(const struct doctor_ctx *c, const char *kind, const char *ns, const char *name)
{
	size_t i;
	json_t *o;

	json_array_foreach (c->pods, i, o) {
		const char *k = json_string_value(json_object_get(o, "kind"));
		const char *n = meta(o, "name"), *s = meta(o, "namespace");

		if (k && streq(k, kind) && n && streq(n, name) && (!ns || !s || streq(s, ns)))
			return o;
	}
	return NULL;
}

const char *cluster_node_label(const struct doctor_ctx *c, const char *key)
{
	return json_string_value(
	    json_object_get(json_object_get(json_object_get(c->node_obj, "metadata"), "labels"), key));
}

const char *cluster_env(const json_t *ctr, const char *name)
{
	size_t i;
	json_t *e;

	json_array_foreach (json_object_get(ctr, "env"), i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));

		if (n && streq(n, name))
			return json_string_value(json_object_get(e, "value"));
	}
	return NULL;
}

/* flag=X, or flag X (--device-list-strategy, --mig-strategy), in a container's command/args */
static const char *flag_arg(const json_t *ctr, const char *flag)
{
	static const char *const lists[] = {"command", "args"};
	size_t fl = strlen(flag);

	for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
		const json_t *a = json_object_get(ctr, lists[l]);

		for (size_t i = 0; i < json_array_size(a); i++) {
			const char *s = json_string_value(json_array_get(a, i));

			if (!s || strncmp(s, flag, fl))
				continue;
			if (s[fl] == '=')
				return s + fl + 1;
			if (!s[fl])
				return json_string_value(json_array_get(a, i + 1));
		}
	}
	return NULL;
}

/* flags.plugin.deviceListStrategy (string or list) and sharing.{mps,timeSlicing} of a config document */
static void read_config_doc(const json_t *doc, struct plugin_cfg *p, const char *src)
{
	const json_t *dls =
	    json_object_get(json_object_get(json_object_get(doc, "flags"), "plugin"), "deviceListStrategy");
	static const char *const kinds[] = {"mps", "timeSlicing"};
	const json_t *mig = json_object_get(json_object_get(doc, "flags"), "migStrategy");

	if (json_is_string(mig)) {
		snprintf(p->mig_strategy, sizeof(p->mig_strategy), "%s", json_string_value(mig));
		snprintf(p->mig_src, sizeof(p->mig_src), "%s: flags.migStrategy", src);
	}
	if (json_is_string(dls)) {
		snprintf(p->strategy, sizeof(p->strategy), "%s", json_string_value(dls));
		snprintf(p->strategy_src, sizeof(p->strategy_src), "%s: flags.plugin.deviceListStrategy", src);
	} else if (json_is_array(dls)) {
		size_t used = 0;

		for (size_t i = 0; i < json_array_size(dls) && used < sizeof(p->strategy); i++)
			used += (size_t)snprintf(p->strategy + used, sizeof(p->strategy) - used, "%s%s", i ? "," : "",
						 json_string_value(json_array_get(dls, i)) ?: "");
		snprintf(p->strategy_src, sizeof(p->strategy_src), "%s: flags.plugin.deviceListStrategy", src);
	}
	for (size_t k = 0; k < ELEMENTSOF(kinds); k++) {
		const json_t *sh = json_object_get(json_object_get(doc, "sharing"), kinds[k]), *fg;
		size_t i;
		json_t *r;

		if (!json_is_object(sh))
			continue;
		snprintf(p->sharing, sizeof(p->sharing), "%s", kinds[k]);
		fg = json_object_get(sh, "failRequestsGreaterThanOne");
		/* api/config/v1/config.go: unset means true for MPS, false for time-slicing */
		p->fail_gt_one = json_is_boolean(fg) ? json_is_true(fg) : streq(kinds[k], "mps");
		json_array_foreach (json_object_get(sh, "resources"), i, r) {
			long long n = json_integer_value(json_object_get(r, "replicas"));

			if (n > p->replicas)
				p->replicas = n;
		}
	}
}

static void use_config_text(const char *src, const char *text, size_t len, struct plugin_cfg *p)
{
	json_auto_t *docs = NULL;

	if (k8sobj_parse(src, text, len, &docs, NULL) >= 0) {
		snprintf(p->config_src, sizeof(p->config_src), "%s", src);
		read_config_doc(json_array_get(docs, 0), p, src);
	}
}

static bool not_dot(const char *name)
{
	return name[0] != '.';
}

/*
 * kubelet's copy of a ConfigMap volume on the node, <kubelet root>/pods/<uid>/volumes/kubernetes.io~configmap/
 * <volume>/<key> (kubelet's atomic writer: each key a link into ..data): the config the plugin really reads
 * when --pods does not hold the ConfigMap. The key: the node label's, config.yaml, or the only one.
 */
static bool read_kubelet_copy(struct doctor_ctx *c, const json_t *pod, const char *volume, const char *want,
			      struct plugin_cfg *p)
{
	const char *uid = meta(pod, "uid");
	char dir[PATH_MAX], keys[16][256], file[PATH_MAX + 300];
	size_t n;

	if (!uid || strchr(uid, '/') || strchr(volume, '/'))
		return false;
	snprintf(dir, sizeof(dir), "%s/pods/%s/volumes/kubernetes.io~configmap/%s", doctor_kubelet_dir(c), uid, volume);
	n = doctor_dir_names(c, dir, not_dot, keys, ELEMENTSOF(keys));
	for (size_t k = 0; k < n; k++) {
		_cleanup_free_ char *path = NULL, *text = NULL;
		size_t len = 0;

		if (!((want && streq(keys[k], want)) || (!want && (streq(keys[k], "config.yaml") || n == 1))))
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, keys[k]);
		path = doctor_path(c, file);
		if (!path || read_file(path, 1 << 20, &text, &len, NULL) < 0)
			return false;
		use_config_text(file, text, len, p);
		return true;
	}
	return false;
}

/* The plugin's ConfigMap volume: the key the node label picks (config-manager), "config.yaml", or the only one. */
static void read_configmap(struct doctor_ctx *c, const json_t *pod, struct plugin_cfg *p)
{
	const char *want = cluster_node_label(c, "nvidia.com/device-plugin.config");
	size_t i;
	json_t *v;

	json_array_foreach (json_object_get(json_object_get(pod, "spec"), "volumes"), i, v) {
		const char *cm = json_string_value(json_object_get(json_object_get(v, "configMap"), "name"));
		const json_t *obj = cm ? cluster_object(c, "ConfigMap", cluster_pod_ns(pod), cm) : NULL;
		const json_t *data = json_object_get(obj, "data");
		const char *key = NULL, *vol = json_string_value(json_object_get(v, "name"));
		const json_t *text = NULL;
		json_t *val;

		if (cm && !obj && !(vol && read_kubelet_copy(c, pod, vol, want, p)))
			p->config_unread = true;
		if (!json_is_object(data))
			continue;
		json_object_foreach ((json_t *)data, key, val) {
			if ((want && streq(key, want)) ||
			    (!want && (streq(key, "config.yaml") || json_object_size(data) == 1))) {
				text = val;
				break;
			}
		}
		if (json_is_string(text)) {
			char src[256];

			snprintf(src, sizeof(src), "ConfigMap %s/%s key %s", cluster_pod_ns(pod), cm, key);
			use_config_text(src, json_string_value(text), json_string_length(text), p);
		}
	}
}

void cluster_plugin_cfg(struct doctor_ctx *c, struct plugin_cfg *p)
{
	size_t i;
	json_t *pod;

	memset(p, 0, sizeof(*p));
	json_array_foreach (c->pods, i, pod) {
		const json_t *ctrs;
		json_t *ctr;
		size_t j;

		if (!cluster_pod_here(c, pod) || cluster_component(pod) != NV_DEVICE_PLUGIN)
			continue;
		p->found = true;
		p->gke = strstr(cluster_pod_name(pod), "nvidia-gpu-device-plugin") != NULL;
		snprintf(p->pod, sizeof(p->pod), "%s/%s", cluster_pod_ns(pod), cluster_pod_name(pod));
		read_configmap(c, pod, p);
		ctrs = json_object_get(json_object_get(pod, "spec"), "containers");
		json_array_foreach (ctrs, j, ctr) {
			/* urfave/cli: a flag on the command line wins over its env var, both over the file */
			const char *env = cluster_env(ctr, "DEVICE_LIST_STRATEGY"),
				   *arg = flag_arg(ctr, "--device-list-strategy");
			const char *menv = cluster_env(ctr, "MIG_STRATEGY"), *marg = flag_arg(ctr, "--mig-strategy");

			if (env || arg) {
				snprintf(p->strategy, sizeof(p->strategy), "%s", arg ? arg : env);
				snprintf(p->strategy_src, sizeof(p->strategy_src), "pod %s: %s", p->pod,
					 arg ? "--device-list-strategy" : "env DEVICE_LIST_STRATEGY");
			}
			if (cluster_env(ctr, "MPS_ROOT") || flag_arg(ctr, "--mps-root"))
				snprintf(p->mps_root, sizeof(p->mps_root), "%s",
					 flag_arg(ctr, "--mps-root") ?: cluster_env(ctr, "MPS_ROOT"));
			if (menv || marg) {
				snprintf(p->mig_strategy, sizeof(p->mig_strategy), "%s", marg ? marg : menv);
				snprintf(p->mig_src, sizeof(p->mig_src), "pod %s: %s", p->pod,
					 marg ? "--mig-strategy" : "env MIG_STRATEGY");
			}
		}
		return;
	}
}

/* The DaemonSet that owns a pod (metadata.ownerReferences), NULL when none says so. */
static const char *owner_daemonset(const json_t *pod)
{
	size_t i;
	json_t *o;

	json_array_foreach (json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), i, o) {
		const char *kind = json_string_value(json_object_get(o, "kind"));

		if (kind && streq(kind, "DaemonSet"))
			return json_string_value(json_object_get(o, "name"));
	}
	return NULL;
}

/*
 * Label keys that select one DaemonSet's pods, in the order charts set them: gpulet's and the
 * upstream chart's app.kubernetes.io set, the static manifest's name=nvidia-device-plugin-ds
 * (k8s-device-plugin deployments/static), the GPU Operator's app=.
 */
static const char *const selector_keys[][3] = {
    {"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component"},
    {"name", NULL, NULL},
    {"app", NULL, NULL},
};

static void pod_selector(const json_t *pod, char *buf, size_t size)
{
	const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");

	buf[0] = '\0';
	for (size_t k = 0; k < ELEMENTSOF(selector_keys) && !buf[0]; k++)
		for (size_t j = 0; j < ELEMENTSOF(selector_keys[k]) && selector_keys[k][j]; j++) {
			const char *v = json_string_value(json_object_get(labels, selector_keys[k][j]));
			size_t used = strlen(buf);

			if (v && used < size)
				snprintf(buf + used, size - used, "%s%s=%s", used ? "," : "", selector_keys[k][j], v);
		}
}

void cluster_plugin_ds(const struct doctor_ctx *c, struct plugin_ds *ds)
{
	size_t i;
	json_t *pod;

	/* k8s-device-plugin's static manifest (deployments/static/nvidia-device-plugin.yml): the default */
	*ds = (struct plugin_ds){
	    .ns = "kube-system", .name = "nvidia-device-plugin-daemonset", .selector = "name=nvidia-device-plugin-ds"};
	json_array_foreach (c->pods, i, pod) {
		const char *owner;

		if (!cluster_pod_here(c, pod) || cluster_component(pod) != NV_DEVICE_PLUGIN ||
		    doctor_pod_is_terminating(pod))
			continue;
		owner = owner_daemonset(pod);
		ds->known = true;
		ds->gpulet = cluster_is_gpulet(pod);
		snprintf(ds->ns, sizeof(ds->ns), "%s", cluster_pod_ns(pod));
		snprintf(ds->pod, sizeof(ds->pod), "%s", cluster_pod_name(pod));
		if (owner)
			snprintf(ds->name, sizeof(ds->name), "%s", owner);
		else if (ds->gpulet)
			snprintf(ds->name, sizeof(ds->name), "gpulet-device-plugin");
		pod_selector(pod, ds->selector, sizeof(ds->selector));
		return;
	}
}

static bool gke_socket(const char *name)
{
	return !strncmp(name, "nvidiaGPU-", 10);
}

bool cluster_gke(struct doctor_ctx *c)
{
	_cleanup_free_ char *p = doctor_path(c, "/home/kubernetes/bin/nvidia");
	char names[1][256];
	size_t i;
	json_t *pod;

	if (!p || access(p, F_OK) != 0)
		return false;
	if (doctor_dir_names(c, doctor_device_plugin_dir(c), gke_socket, names, 1))
		return true;
	json_array_foreach (c->pods, i, pod)
		if (cluster_pod_here(c, pod) && strstr(cluster_pod_name(pod), "nvidia-gpu-device-plugin"))
			return true;
	return false;
}
