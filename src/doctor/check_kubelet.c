/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Links 7–10: kubelet is up, the device plugin registered where kubelet looks, the advertised MIG
 * layout matches the GPUs, and no device is held by a pod that is gone (docs/reference/field-guide.md §3.1, §4.1,
 * §4.3). Inputs are files only (device-plugins dir, kubelet_internal_checkpoint, pods dir, --pods,
 * --node): no API server needed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "kube/checkpoint.h"
#include "doctor/cluster.h"
#include "doctor/doctor.h"
#include "doctor/kubelet_root.h"
#include "doctor/runtime_find.h"
#include "util/fileio.h"
#include "nvml/node.h"
#include "kube/podres.h"
#include "parse/toml.h"

static bool exists(const struct doctor_ctx *c, const char *dir, const char *name, struct stat *st)
{
	_cleanup_free_ char *p = NULL;
	struct stat dummy;

	if (asprintf(&p, "%s/%s/%s", doctor_root(c->o), dir, name) < 0)
		return false;
	return stat(p, st ? st : &dummy) == 0;
}

static bool live_root(const struct doctor_ctx *c)
{
	return c->o->live || streq(doctor_root(c->o), "/");
}

/* connect() to a UNIX socket: 0 answers, -ECONNREFUSED nobody listens (stale), other -errno unknown. */
static int socket_state(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* On the live host a socket file without a listener is a kubelet that died: try to connect. */
static bool socket_answers(const char *path, int *state)
{
	int r = socket_state(path);

	*state = r;
	return r == 0 || r == -ENAMETOOLONG;
}

/* The kubelet root dir in use, from the node's live configuration (doctor/kubelet_root.h). */
static const char *kubelet_dir(struct doctor_ctx *c)
{
	return doctor_kubelet_dir(c);
}

/*
 * No trace of kubelet at all (a GPU server without Kubernetes, a Docker host): the kubelet, plugin
 * and allocation links do not apply, so they are skipped with that reason rather than failed. Any
 * trace (unit, config, binary, root dir, process) without a running kubelet stays kubelet.not-running.
 */
static bool no_kubelet(struct doctor_ctx *c)
{
	char what[600];

	if (doctor_kubelet_trace(c, what, sizeof(what)))
		return false;
	doctor_skip(c, KUBELET_ABSENT);
	return true;
}

int doctor_check_kubelet(struct doctor_ctx *c)
{
	const char *kd = kubelet_dir(c), *dp = doctor_device_plugin_dir(c);
	struct doctor_finding *f;
	struct stat st;

	if (no_kubelet(c))
		return 0;
	doctor_kubelet_root_findings(c);
	if (!exists(c, dp, "kubelet.sock", &st)) {
		f = doctor_report(
		    c, "kubelet.not-running", DOCTOR_FAIL, LINK_KUBELET,
		    "systemctl status kubelet; journalctl -u kubelet -e (device plugins can only register "
		    "once kubelet has created its Registration socket)",
		    "kubelet's device-plugin Registration socket is missing: kubelet is not running (or "
		    "uses another --root-dir), so no device plugin can register");
		doctor_evidence(f, "%s/kubelet.sock does not exist", dp);
		doctor_kubelet_root_evidence(c, f);
		for (size_t k = 0; k < kroot_n_known; k++)
			if (strncmp(dp, kroot_known[k].dir, strlen(kroot_known[k].dir)) ||
			    !streq(dp + strlen(kroot_known[k].dir), "/device-plugins"))
				doctor_evidence(f, "%s/device-plugins/kubelet.sock does not exist either (%s)",
						kroot_known[k].dir, kroot_known[k].source);
		return 0;
	}
	if (live_root(c) && S_ISSOCK(st.st_mode)) {
		_cleanup_free_ char *p = NULL;

		int r;

		/* below --root: with --live the root is the running node mounted elsewhere (/host) */
		if (asprintf(&p, "%s/%s/kubelet.sock", doctor_root(c->o), dp) >= 0 && !socket_answers(p, &r)) {
			f = doctor_report(c, "kubelet.not-running", DOCTOR_FAIL, LINK_KUBELET,
					  "systemctl restart kubelet; journalctl -u kubelet -e",
					  "kubelet's Registration socket exists but nobody answers: kubelet is down");
			doctor_evidence(f, "connect(%s): %s", p, strerror(-r));
			doctor_kubelet_root_evidence(c, f);
			return 0;
		}
	}
	f = doctor_report(c, "kubelet.ok", DOCTOR_OK, LINK_KUBELET, NULL, "kubelet Registration socket in %s", dp);
	doctor_kubelet_root_evidence(c, f);
	if (!exists(c, kd, "pod-resources/kubelet.sock", NULL))
		doctor_evidence(f, "no %s/pod-resources/kubelet.sock: the exporter cannot attribute GPUs to pods", kd);
	return 0;
}

/*
 * nvidia-*.sock in dir (below root); names returned in buf (comma separated). When stale is given
 * (live root), each socket is connected to and the ones nobody listens on go to stale.
 */
static size_t plugin_sockets(const struct doctor_ctx *c, const char *dir, char *buf, size_t size, char *stale,
			     size_t stale_size, size_t *n_stale)
{
	_cleanup_free_ char *p = NULL;
	DIR *d;
	struct dirent *de;
	size_t n = 0, used = 0, sused = 0;

	if (asprintf(&p, "%s/%s", doctor_root(c->o), dir) < 0)
		return 0;
	d = opendir(p);
	if (!d)
		return 0;
	buf[0] = '\0';
	if (stale)
		stale[0] = '\0';
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		_cleanup_free_ char *sp = NULL;

		if (strncmp(de->d_name, "nvidia", 6) || l < 5 || !streq(de->d_name + l - 5, ".sock"))
			continue;
		if (used < size)
			used += (size_t)snprintf(buf + used, size - used, "%s%s", n ? ", " : "", de->d_name);
		n++;
		if (stale && asprintf(&sp, "%s/%s", p, de->d_name) >= 0 && socket_state(sp) == -ECONNREFUSED) {
			if (sused < stale_size)
				sused += (size_t)snprintf(stale + sused, stale_size - sused, "%s%s",
							  *n_stale ? ", " : "", de->d_name);
			(*n_stale)++;
		}
	}
	closedir(d);
	return n;
}

static json_t *node_status(const struct doctor_ctx *c, const char *what)
{
	return json_object_get(json_object_get(c->node_obj, "status"), what);
}

/* "8" or 8 in a Node's capacity/allocatable; -1 when absent */
static long long quantity(const json_t *list, const char *res)
{
	const json_t *v = json_object_get(list, res);

	if (json_is_string(v))
		return atoll(json_string_value(v));
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

static bool checkpoint_has_nvidia(const struct checkpoint *ck)
{
	for (size_t k = 0; ck && k < ck->n_registered; k++)
		if (!strncmp(ck->registered[k].resource, "nvidia.com/", 11))
			return true;
	return false;
}

/*
 * Device-plugins dirs a plugin may serve its sockets in by mistake: each known kubelet root dir's and
 * this kubelet's root dir's device-plugins, the fixed one; not dp (the one kubelet serves).
 */
static size_t mismatch_dirs(struct doctor_ctx *c, const char *dp, char dirs[][300], size_t max)
{
	size_t n = 0;

	for (size_t k = 0; k <= kroot_n_known && n < max; k++) {
		bool dup = false;

		snprintf(dirs[n], sizeof(dirs[0]), "%s/device-plugins",
			 k < kroot_n_known ? kroot_known[k].dir : kubelet_dir(c));
		for (size_t i = 0; i < n && !dup; i++)
			dup = streq(dirs[i], dirs[n]);
		if (!dup && !streq(dirs[n], dp))
			n++;
	}
	return n;
}

/*
 * Field guide case 4.1 step 2 (docs/reference/field-guide.md §4.1): the plugin serves its sockets in
 * another device-plugins dir than the one kubelet serves (docs/reference/kubelet-root-dir.md: released
 * kubelets use the fixed /var/lib/kubelet/device-plugins whatever --root-dir says).
 */
static bool socket_dir_mismatch(struct doctor_ctx *c, const char *dp)
{
	struct doctor_finding *f;
	char dirs[8][300], other[512], fix[1024];
	size_t n = mismatch_dirs(c, dp, dirs, ELEMENTSOF(dirs));

	for (size_t k = 0; k < n; k++) {
		if (!plugin_sockets(c, dirs[k], other, sizeof(other), NULL, 0, NULL))
			continue;
		snprintf(fix, sizeof(fix),
			 "point the device plugin DaemonSet's device-plugins hostPath volume at %s, the dir kubelet "
			 "serves (mounted where the plugin serves its socket, /var/lib/kubelet/device-plugins in "
			 "the container), instead of %s; then restart the plugin pod",
			 dp, dirs[k]);
		f = doctor_report(c, "plugin.socket-dir-mismatch", DOCTOR_FAIL, LINK_PLUGIN, fix,
				  "socket dir mismatch: the device plugin serves its socket in %s but kubelet serves "
				  "device plugins in %s, so it never registers and the node has no nvidia.com/gpu",
				  dirs[k], dp);
		doctor_evidence(f, "plugin sockets in %s: %s", dirs[k], other);
		doctor_evidence(f, "kubelet's Registration socket is %s/kubelet.sock", dp);
		doctor_kubelet_root_evidence(c, f);
		return true;
	}
	return false;
}

int doctor_check_plugin(struct doctor_ctx *c)
{
	const char *dp = doctor_device_plugin_dir(c);
	char socks[512], stale[512], fix[1024];
	struct plugin_ds ds;
	size_t n_stale = 0;
	size_t n = plugin_sockets(c, dp, socks, sizeof(socks), live_root(c) ? stale : NULL, sizeof(stale), &n_stale);
	struct doctor_finding *f;
	bool ck = doctor_need_checkpoint(c) > 0 && checkpoint_has_nvidia(c->ckpt);
	long long cap = quantity(node_status(c, "capacity"), "nvidia.com/gpu");
	long long alloc = quantity(node_status(c, "allocatable"), "nvidia.com/gpu");

	if (no_kubelet(c))
		return 0;
	cluster_plugin_ds(c, &ds);
	if (!n) {
		if (socket_dir_mismatch(c, dp))
			return 0;
		if (doctor_dra_registered(c)) { /* GPUs come through DRA (check_dra.c), not a device plugin */
			doctor_report(c, "plugin.ok", DOCTOR_OK, LINK_PLUGIN, NULL,
				      "no device plugin: the DRA driver serves this node's GPUs");
			return 0;
		}
		snprintf(fix, sizeof(fix),
			 "kubectl -n %s logs ds/%s | grep -i 'Registered device plugin'; check the DaemonSet is "
			 "scheduled on this node (nodeSelector, tolerations) and mounts %s",
			 ds.ns, ds.name, dp);
		f = doctor_report(c, "plugin.not-registered", DOCTOR_FAIL, LINK_PLUGIN, fix,
				  "no NVIDIA device plugin socket in kubelet's device-plugins dir: the plugin is not "
				  "running here, so Allocatable has no nvidia.com/gpu (Insufficient nvidia.com/gpu)");
		doctor_evidence(f, "%s has no nvidia-*.sock", dp);
		if (c->ckpt_state > 0 && !ck)
			doctor_evidence(f,
					"kubelet_internal_checkpoint RegisteredDevices has no nvidia.com/* resource");
		if (c->node_obj && alloc <= 0)
			doctor_evidence(f, "--node: allocatable nvidia.com/gpu is %lld", alloc < 0 ? 0 : alloc);
		return 0;
	}
	if (n_stale) {
		snprintf(fix, sizeof(fix),
			 "restart the device plugin (kubectl -n %s delete pod -l %s) and find why it died: kubectl "
			 "describe pod (Last State: OOMKilled / exit code), kubectl logs --previous; raise its memory "
			 "limit if OOMKilled",
			 ds.ns, ds.selector);
		f = doctor_report(c, "plugin.not-registered", DOCTOR_FAIL, LINK_PLUGIN, fix,
				  "a device plugin socket is stale: nobody listens on it, so kubelet cannot allocate "
				  "its GPUs (and drops them from Allocatable)");
		doctor_evidence(f,
				"%s: %s: socket is stale (the plugin died or was OOM-killed): "
				"connect() is refused",
				dp, stale);
		if (n_stale < n)
			doctor_evidence(f, "plugin sockets in that dir: %s", socks);
		return 0;
	}
	if (c->node_obj && cap <= 0 && !ck) {
		snprintf(
		    fix, sizeof(fix),
		    "the plugin's log should say 'Registered device plugin' (kubectl -n %s logs ds/%s); if it does "
		    "not, restart it (kubectl -n %s delete pod -l %s)",
		    ds.ns, ds.name, ds.ns, ds.selector);
		f = doctor_report(c, "plugin.not-registered", DOCTOR_FAIL, LINK_PLUGIN, fix,
				  "the plugin socket exists but kubelet lists no nvidia.com/gpu: registration failed");
		doctor_evidence(f, "%s: %s", dp, socks);
		doctor_evidence(f, "--node: capacity nvidia.com/gpu absent or 0");
		return 0;
	}
	(void)doctor_report(c, "plugin.ok", DOCTOR_OK, LINK_PLUGIN, NULL, "device plugin sockets: %s", socks);
	if (c->node_obj && cap > 0 && alloc >= 0 && alloc < cap) {
		/* a plugin pod that is down (doctor/check_cluster.c) drops its GPUs from Allocatable too */
		const struct doctor_finding *why = doctor_find(c, "plugin.pod-crashing");

		for (size_t k = 0; k < c->n_findings && !why; k++)
			if (c->findings[k].link == LINK_GPU && c->findings[k].severity == DOCTOR_FAIL)
				why = &c->findings[k];
		const size_t why_k = why ? (size_t)(why - c->findings) : SIZE_MAX;

		f = doctor_report(
		    c, "plugin.allocatable-short", why ? DOCTOR_WARN : DOCTOR_FAIL, LINK_PLUGIN,
		    "find the unhealthy GPU in the plugin log ('unhealthy device', XID) and in gpulet doctor's "
		    "gpu.* findings; the plugin re-advertises it once healthy",
		    "Allocatable nvidia.com/gpu (%lld) is smaller than Capacity (%lld): %lld GPU(s) %s", alloc, cap,
		    cap - alloc,
		    why && streq(why->id, "plugin.pod-crashing")
			? "are not advertised while the device plugin pod is down"
		    : why ? "are marked unhealthy"
			  : "are marked unhealthy for a reason this node's logs do not show");
		doctor_evidence(f, "--node: capacity nvidia.com/gpu %lld, allocatable %lld", cap, alloc);
		/* the report may have moved the findings: why again by its index */
		if (why_k < c->n_findings)
			doctor_evidence(f, "explained by %s: %s", c->findings[why_k].id, c->findings[why_k].summary);
	}
	return 0;
}

/* ---- MIG ---- */

static bool advertised(const struct checkpoint *ck, const char *id)
{
	for (size_t k = 0; ck && k < ck->n_registered; k++)
		for (size_t i = 0; i < ck->registered[k].n_ids; i++) {
			const char *a = ck->registered[k].device_ids[i];
			size_t l = strlen(id);

			/* replicas are advertised as <uuid>::<n> */
			if (!strncmp(a, id, l) && (a[l] == '\0' || a[l] == ':'))
				return true;
		}
	return false;
}

/*
 * MIG instances reach containers safely: the runtime resolves CDI names (containerd with enable_cdi,
 * CRI-O always), or pods get NVIDIA's runtime by default, whose hook injects the instance named in
 * NVIDIA_VISIBLE_DEVICES (rt_facts.c).
 */
static bool mig_injected(struct doctor_ctx *c)
{
	struct rt_facts f;

	return rt_facts_get(c, &f) > 0 && (f.cdi || rt_handler(c, f.default_handler) == RTH_NVIDIA);
}

/* The one mig.layout-stale finding, made on first use. */
static struct doctor_finding *stale_finding(struct doctor_ctx *c)
{
	struct doctor_finding *f = doctor_find(c, "mig.layout-stale");
	struct plugin_ds ds;
	char fix[512];

	if (f)
		return f;
	cluster_plugin_ds(c, &ds);
	snprintf(fix, sizeof(fix),
		 "restart the device plugin so it re-reads the MIG layout (kubectl -n %s delete pod -l %s)%s", ds.ns,
		 ds.selector, ds.gpulet ? "" : "; gpulet plugin re-advertises live on a re-partition");
	return doctor_report(c, "mig.layout-stale", DOCTOR_FAIL, LINK_MIG, fix,
			     "the MIG layout was changed but the device plugin still advertises the old one: pods get "
			     "instances that no longer exist or none");
}

/* A device of this spec file (below root) named after a MIG-enabled GPU: its UUID or its index. */
static bool spec_has_whole_mig_gpu(struct doctor_ctx *c, const char *rel)
{
	_cleanup_free_ char *p = doctor_path(c, rel);
	json_auto_t *spec = p ? json_load_file(p, 0, NULL) : NULL;
	size_t i;
	json_t *dev;

	json_array_foreach (json_object_get(spec, "devices"), i, dev) {
		const char *name = json_string_value(json_object_get(dev, "name"));

		for (size_t g = 0; name && g < c->node->n_gpus; g++) {
			char idx[16];

			snprintf(idx, sizeof(idx), "%u", c->node->gpus[g].index);
			if (c->node->gpus[g].mig_enabled && (streq(name, c->node->gpus[g].uuid) || streq(name, idx)))
				return true;
		}
	}
	return false;
}

/*
 * The plugin runs with --mig-strategy=none: a MIG-enabled GPU is advertised whole on purpose
 * (upstream's buildGPUDeviceMap skips it only under single/mixed) and no MIG instance is advertised.
 * From the plugin pod's flag, env or ConfigMap (a plugin pod that sets none of them runs with the
 * default, none); without one, from gpulet's plugin spec in /var/run/cdi, which defines a MIG-enabled
 * GPU whole only under none (docs/reference/device-plugin.md §8).
 */
static bool mig_strategy_none(struct doctor_ctx *c)
{
	struct plugin_cfg p;
	char names[32][256];
	size_t n;

	cluster_plugin_cfg(c, &p);
	if (p.found && (p.mig_strategy[0] || !p.config_unread))
		return !p.mig_strategy[0] || streq(p.mig_strategy, "none");
	n = doctor_cdi_dir_files(c, "/var/run/cdi", names, ELEMENTSOF(names));
	for (size_t k = 0; k < n; k++) {
		char rel[300];

		snprintf(rel, sizeof(rel), "/var/run/cdi/%s", names[k]);
		if (!strncmp(names[k], "k8s.device-plugin.nvidia.com", 28) && spec_has_whole_mig_gpu(c, rel))
			return true;
	}
	return false;
}

/* Advertised IDs in the checkpoint vs the MIG instances NVML sees now. */
static void stale_from_checkpoint(struct doctor_ctx *c, const struct checkpoint *ck)
{
	bool none = mig_strategy_none(c);

	for (size_t k = 0; k < ck->n_registered; k++)
		for (size_t i = 0; i < ck->registered[k].n_ids; i++) {
			char id[128];
			const char *a = ck->registered[k].device_ids[i];

			snprintf(id, sizeof(id), "%.*s", (int)strcspn(a, ":"), a);
			if (!strncmp(id, "MIG-", 4) && !node_find_mig(c->node, id, NULL))
				doctor_evidence(stale_finding(c), "%s advertises %s, which no longer exists",
						ck->registered[k].resource, id);
		}
	for (size_t g = 0; g < c->node->n_gpus; g++) {
		const struct node_gpu *gpu = &c->node->gpus[g];

		if (none)
			continue; /* whole GPUs on purpose, and no instance advertised */
		if (gpu->mig_enabled && advertised(ck, gpu->uuid))
			doctor_evidence(stale_finding(c),
					"GPU %u %s is in MIG mode but still advertised as a whole GPU", gpu->index,
					gpu->uuid);
		for (size_t m = 0; m < gpu->n_migs; m++)
			if (!advertised(ck, gpu->migs[m].uuid))
				doctor_evidence(stale_finding(c), "MIG %s (%s on GPU %u) is not advertised",
						gpu->migs[m].uuid, gpu->migs[m].profile, gpu->index);
	}
}

/* --node capacity nvidia.com/mig-<profile> vs the number of instances of that profile now. */
static void stale_from_node(struct doctor_ctx *c)
{
	const json_t *cap = node_status(c, "capacity");
	const char *res;
	json_t *v;

	json_object_foreach ((json_t *)cap, res, v) {
		long long have = 0, adv = quantity(cap, res);

		if (strncmp(res, "nvidia.com/mig-", 15))
			continue;
		for (size_t g = 0; g < c->node->n_gpus; g++)
			for (size_t m = 0; m < c->node->gpus[g].n_migs; m++)
				have += streq(c->node->gpus[g].migs[m].profile, res + 15);
		if (adv != have)
			doctor_evidence(stale_finding(c), "--node capacity %s = %lld, NVML has %lld instance(s) of %s",
					res, adv, have, res + 15);
	}
}

int doctor_check_mig(struct doctor_ctx *c)
{
	const struct checkpoint *ck;
	size_t n_mig_gpus = 0;

	if (doctor_need_nvml(c) < 0)
		return 0;
	ck = doctor_need_checkpoint(c) > 0 ? c->ckpt : NULL;
	for (size_t g = 0; g < c->node->n_gpus; g++)
		n_mig_gpus += c->node->gpus[g].mig_enabled;
	if (ck && checkpoint_has_nvidia(ck))
		stale_from_checkpoint(c, ck);
	if (c->node_obj)
		stale_from_node(c);
	if (n_mig_gpus && !mig_injected(c)) {
		struct doctor_finding *f = doctor_report(
		    c, "mig.without-cdi", DOCTOR_WARN, LINK_MIG,
		    "enable CDI in containerd (enable_cdi = true) and run the plugin with CDI "
		    "(--device-list-strategy=cdi-cri), so each MIG instance is injected with its own caps devices",
		    "MIG is enabled but the runtime's CDI is off: MIG instances depend on the legacy hook, and a "
		    "misconfigured runtime hands the container the whole GPU instead of its instance");
		doctor_evidence(f, "%zu GPU(s) in MIG mode", n_mig_gpus);
		doctor_evidence(f, "the runtime's CDI is off (containerd enable_cdi) or its config was not read");
	}
	return 0;
}

/* ---- allocations ---- */

static const json_t *pod_by_uid(const struct doctor_ctx *c, const char *uid)
{
	return cluster_pod_where(c, "metadata", "uid", uid);
}

/*
 * A finished pod (phase Succeeded or Failed) is no longer one of kubelet's active pods: its device
 * manager frees what such a pod holds at the next Allocate (UpdateAllocatedDevices keeps the active
 * pods' devices only) and the scheduler no longer counts it, so nothing waits on its GPUs
 * (docs/reference/cluster-events.md).
 */
static bool pod_finished(const json_t *pod)
{
	const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));

	return phase && (streq(phase, "Succeeded") || streq(phase, "Failed"));
}

/* Does any pod that kubelet's PodResources lists hold one of these devices? */
static bool held_by_listed_pod(const struct podres_map *m, char *const *ids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char base[128];
		const struct podres_device *first;

		snprintf(base, sizeof(base), "%.*s", (int)strcspn(ids[i], ":"), ids[i]); /* <uuid>::<replica> */
		if (podres_find(m, base, &first))
			return true;
	}
	return false;
}

int doctor_check_alloc(struct doctor_ctx *c)
{
	const char *kd = kubelet_dir(c);
	_cleanup_(podres_map_freep) struct podres_map *live = NULL;
	_cleanup_free_ char *sock = NULL;
	struct doctor_finding *f = NULL;
	struct stat st;
	/* no pods/ under root at all: not mounted (the chart's doctor keeps other pods' dirs out), not a
	 * kubelet without pods; without PodResources nothing then says whether a holder is gone */
	bool have_pods = exists(c, kd, "pods", NULL), unknown = false;

	if (no_kubelet(c))
		return 0;
	if (doctor_need_checkpoint(c) <= 0)
		return 0;
	/* live kubelet: PodResources List shows what running pods hold (docs/reference/monitoring-doctor.md A4) */
	if (!c->pods && exists(c, kd, "pod-resources/kubelet.sock", &st) && S_ISSOCK(st.st_mode) &&
	    asprintf(&sock, "%s/pod-resources/kubelet.sock", kd) >= 0 &&
	    podres_list(doctor_root(c->o), sock, 2000, NULL, &live, NULL) < 0)
		live = NULL;
	for (size_t k = 0; k < c->ckpt->n_entries; k++) {
		const struct checkpoint_entry *e = &c->ckpt->entries[k];
		const json_t *pod = c->pods ? pod_by_uid(c, e->pod_uid) : NULL;
		char pods_dir[300], ids[512];
		const char *why = NULL;
		size_t used = 0;

		if (strncmp(e->resource, "nvidia.com/", 11))
			continue;
		snprintf(pods_dir, sizeof(pods_dir), "pods/%s", e->pod_uid);
		if (pod && (!doctor_pod_is_terminating(pod) || pod_finished(pod)))
			continue;
		if (pod)
			why = "is terminating (deletionTimestamp set) and still running";
		else if (c->pods)
			why = "is not in --pods";
		else if (live && !held_by_listed_pod(live, e->device_ids, e->n_ids))
			why = "is not running: kubelet's PodResources List shows no pod holding these devices";
		else if (!live && !have_pods)
			unknown = true;
		else if (!live && !exists(c, kd, pods_dir, NULL))
			why = "has no directory under the kubelet's pods/ any more";
		if (!why)
			continue;
		if (!f)
			f = doctor_report(
			    c, "alloc.held-by-terminated-pod", DOCTOR_FAIL, LINK_ALLOC,
			    "check no container of the pod still runs (crictl ps -a | grep POD), then "
			    "kubectl delete pod NAME --grace-period=0 --force; for a pod that no longer exists "
			    "restart kubelet so it rebuilds its allocation table",
			    "kubelet's allocation table still gives GPUs to pods that are gone: the count looks "
			    "right but new pods stay Pending");
		ids[0] = '\0';
		for (size_t i = 0; i < e->n_ids && used < sizeof(ids); i++)
			used +=
			    (size_t)snprintf(ids + used, sizeof(ids) - used, "%s%s", i ? "," : "", e->device_ids[i]);
		doctor_evidence(f, "pod %s%s%s (container %s) %s, holds %s %s", e->pod_uid, pod ? " " : "",
				pod ? json_string_value(json_object_get(json_object_get(pod, "metadata"), "name")) : "",
				e->container, why, e->resource, ids);
	}
	if (unknown)
		doctor_skip(
		    c,
		    "kubelet's PodResources socket (%s/pod-resources/kubelet.sock) does not answer and %s/pods is "
		    "not under --root (not mounted): cannot tell whether the pods holding GPUs still exist; run "
		    "with --live where kubelet answers, or give --pods",
		    kd, kd);
	return 0;
}
