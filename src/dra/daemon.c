/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA driver's daemon (dra.h): the owner of its state and its run loop, so one of the places in
 * dra/ that log above debug (docs/HACKING.md §1). Threads: the loop's (util/loop.h: signals, the
 * health queue, the API server's changes, the tick), the gRPC thread (prepare and unprepare, the
 * health stream; every call under the server group's lock), the health watcher's and the API
 * client's informer threads (each only queues and wakes the loop). What a call reads (the node,
 * the devices, the checkpoint) the loop changes only under that lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dra/daemon_health.h"
#include "dra/devices.h"
#include "dra/dra.h"
#include "dra/prepare.h"
#include "dra/server.h"
#include "nvml/node.h"
#include "util/fileio.h"
#include "util/hostpaths.h"
#include "util/log.h"
#include "util/loop.h"

#define TICK_MS          1000
#define PUBLISH_RETRY_MS 1000 /* doubling up to PUBLISH_MAX_MS after each failure */
#define PUBLISH_MAX_MS   30000
#define MPS_CHECK_MS     30000 /* the MPS daemons of prepared claims asked whether they still run */

struct dra_daemon {
	struct dra_daemon_options o;
	struct nvml *nv;
	struct node *node;
	struct dra_devices devices;
	struct dra_checkpoint *cp;
	struct dra_prep prep;
	char *plugin_dir;          /* host path <plugins>/<driver> */
	char *endpoint;            /* host path of dra.sock */
	char *reg_sock, *dra_sock; /* as opened here (under --root) */
	struct dra_server *srv;
	struct loop *loop;
	struct dra_health health;
	/* the faults the watcher reported and has not taken back: applied again to devices rebuilt after a MIG change
	 */
	struct dra_health_item *faults;
	size_t n_faults;
	/* publishing */
	bool publish_due, taints_dropped;
	long long next_publish_ms, publish_backoff_ms, next_mps_ms;
	char publish_error[GERR_MAX]; /* the last failure said, not said again until it changes */
	char withheld[256];           /* the device plugin's resources that made us withhold the pool, "" when none */
};

/* ---- the gRPC thread's calls -------------------------------------------------------------------- */

static int on_prepare(void *data, const struct dra_claim_ref *ref, json_t **ret, struct gerr *err)
{
	struct dra_daemon *d = data;
	json_auto_t *claim = NULL;
	long long t0 = loop_now_ms(), t1 = t0;
	int r;

	if (!d->o.claims) {
		r = gerr_set(
		    err, ENOTCONN,
		    "ResourceClaim %s/%s: this gpulet dra cannot read ResourceClaims from the API server (it has "
		    "no Kubernetes API client), so it cannot prepare claims",
		    ref->ns, ref->name);
	} else if ((r = d->o.claims->get(d->o.claims->data, ref->ns, ref->name, &claim, err)) < 0) {
		gerr_prefix(err, "ResourceClaim %s/%s: ", ref->ns, ref->name);
	} else {
		t1 = loop_now_ms();
		r = dra_prepare(&d->prep, claim, ref, ret, err);
	}
	if (r < 0)
		log_error("Cannot prepare claim", "claim=%s/%s uid=%s error=\"%s\"", ref->ns, ref->name, ref->uid,
			  err->msg);
	else /* the claim's GET and the rest, each in ms: where a slow prepare spends its time */
		log_info("Prepared claim", "claim=%s/%s uid=%s devices=%zu get_ms=%lld prepare_ms=%lld", ref->ns,
			 ref->name, ref->uid, json_array_size(*ret), t1 - t0, loop_now_ms() - t1);
	return r;
}

static int on_unprepare(void *data, const struct dra_claim_ref *ref, struct gerr *err)
{
	struct dra_daemon *d = data;
	bool known = ref->uid[0] && dra_checkpoint_claim(d->cp, ref->uid);
	int r;

	/* kubelet names claims by the uid it got: one that cannot name a file was never ours */
	if (!dra_uid_valid(ref->uid))
		r = gerr_set(err, EINVAL, "claim uid \"%s\" is not a Kubernetes uid", ref->uid);
	else
		r = dra_unprepare(&d->prep, ref->uid, err);
	if (r < 0)
		log_error("Cannot unprepare claim", "claim=%s/%s uid=%s error=\"%s\"", ref->ns, ref->name, ref->uid,
			  err->msg);
	else
		log_info(known ? "Unprepared claim" : "Unprepared claim (was not prepared)", "claim=%s/%s uid=%s",
			 ref->ns, ref->name, ref->uid);
	return r;
}

static void on_registered(void *data, bool ok, const char *error)
{
	struct dra_daemon *d = data;

	if (ok)
		log_info("Registered DRA plugin with kubelet", "driver=%s endpoint=%s", d->o.driver, d->endpoint);
	else
		log_error("kubelet refused the DRA plugin's registration", "driver=%s error=\"%s\"", d->o.driver,
			  error);
}

/* NodeWatchResources: every device this node has, healthy or not (lock held). */
static json_t *on_health_list(void *data)
{
	struct dra_daemon *d = data;
	json_t *out = json_array();

	for (size_t i = 0; out && i < d->devices.n; i++) {
		const struct dra_device *v = &d->devices.v[i];

		json_array_append_new(out, json_pack("{s:s, s:s, s:b, s:I}", "pool", d->o.node_name, "device", v->name,
						     "healthy", !v->unhealthy, "since", (json_int_t)v->health_since));
	}
	return out;
}

static const struct dra_server_ops ops = {
    .prepare = on_prepare, .unprepare = on_unprepare, .registered = on_registered, .health = on_health_list};

/* ---- the devices ---------------------------------------------------------------------------------- */

static void log_devices(const struct dra_devices *devs)
{
	for (size_t i = 0; i < json_array_size(devs->left_out); i++)
		log_warn("Device not published", "reason=\"%s\"", json_string_value(json_array_get(devs->left_out, i)));
	for (size_t i = 0; i < devs->n; i++) {
		const struct dra_device *v = &devs->v[i];

		log_info("DRA device", "device=%s uuid=%s index=%u", v->name, dra_device_uuid(v),
			 v->mig ? v->mig->index : v->gpu->index);
	}
}

/* The faults still active, applied to freshly built devices (a rebuild is no recovery). */
static void apply_faults(struct dra_daemon *d, struct dra_devices *devs)
{
	long long now = time(NULL);

	for (size_t i = 0; i < d->n_faults; i++) {
		const struct dra_health_item *it = &d->faults[i];

		dra_devices_set_health(devs, it->uuid, it->gi, it->ci, false, it->taint_key, it->taint_value,
				       it->reason, now);
	}
}

/* Remember (or forget, when healthy) a fault by GPU and instance. */
static void track_fault(struct dra_daemon *d, const struct dra_health_item *it)
{
	size_t i;

	for (i = 0; i < d->n_faults; i++)
		if (streq(d->faults[i].uuid, it->uuid) && d->faults[i].gi == it->gi && d->faults[i].ci == it->ci)
			break;
	if (it->healthy) {
		if (i < d->n_faults)
			d->faults[i] = d->faults[--d->n_faults];
		return;
	}
	if (i == d->n_faults) {
		struct dra_health_item *f = realloc(d->faults, (d->n_faults + 1) * sizeof(*f));

		if (!f)
			return;
		d->faults = f;
		d->n_faults++;
	}
	d->faults[i] = *it;
	d->faults[i].next = NULL;
}

/* ---- publishing ------------------------------------------------------------------------------------ */

static void want_publish(struct dra_daemon *d)
{
	d->publish_due = true;
	d->next_publish_ms = 0;
	if (d->loop)
		loop_due(d->loop, 0);
}

/* Whether the device plugin advertises this node's GPUs; said once each time that changes. */
static bool withhold(struct dra_daemon *d)
{
	const struct dra_slice_publisher *p = d->o.publisher;
	char what[sizeof(d->withheld)] = "";
	int r = p->device_plugin ? p->device_plugin(p->data, what, sizeof(what)) : 0;

	if (r == -EAGAIN) /* the Node is not known yet: publish() waits for it too */
		return true;
	if (r <= 0)
		what[0] = '\0';
	if (!streq(what, d->withheld)) {
		if (what[0])
			log_error(
			    "A device plugin advertises GPUs on this node: the DRA driver publishes none until it "
			    "stops, so that no GPU is given out twice",
			    "node=%s resources=\"%s\" hint=\"%s\"", d->o.node_name, what,
			    "run either the device plugin or the DRA driver on a node (docs/reference/dra.md §13)");
		else
			log_info("No device plugin advertises GPUs on this node: publishing them", "node=%s",
				 d->o.node_name);
		snprintf(d->withheld, sizeof(d->withheld), "%s", what);
	}
	return what[0] != '\0';
}

static void publish(struct dra_daemon *d)
{
	const struct dra_slice_publisher *p = d->o.publisher;
	bool held = withhold(d), taints = d->o.taints && !d->taints_dropped;
	json_auto_t *slices = NULL;
	struct gerr err = {0};
	int64_t gen = 0;
	size_t shown = 0;
	int r;

	d->publish_due = false;
	r = dra_slices_build(&d->devices,
			     &(struct dra_slice_options){.driver = d->o.driver,
							 .node_name = d->o.node_name,
							 .generation = 1,
							 .taints = taints,
							 .withhold = held},
			     &slices, &err);
	if (r >= 0)
		r = p->publish(p->data, slices, &gen, &err);
	if (r < 0) {
		d->publish_due = true;
		d->publish_backoff_ms = MIN(MAX(d->publish_backoff_ms * 2, PUBLISH_RETRY_MS), PUBLISH_MAX_MS);
		d->next_publish_ms = loop_now_ms() + d->publish_backoff_ms;
		/* -EAGAIN: the API server's answer is on its way (an informer's first list, the watch catching
		 * up with our writes): said once it lasts; any other failure once per distinct error */
		if (r == -EAGAIN && d->publish_backoff_ms <= 4 * PUBLISH_RETRY_MS)
			log_debug("Cannot publish the ResourceSlices yet", "error=\"%s\"", err.msg);
		else if (!streq(err.msg, d->publish_error)) {
			log_error("Cannot publish the ResourceSlices; trying again", "driver=%s node=%s error=\"%s\"",
				  d->o.driver, d->o.node_name, err.msg);
			snprintf(d->publish_error, sizeof(d->publish_error), "%s", err.msg);
		}
		return;
	}
	d->publish_backoff_ms = 0;
	d->publish_error[0] = '\0';
	for (size_t i = 0; i < json_array_size(slices); i++)
		shown +=
		    json_array_size(json_object_get(json_object_get(json_array_get(slices, i), "spec"), "devices"));
	if (r > 0)
		log_info("Published the ResourceSlices",
			 "driver=%s node=%s generation=%lld slices=%zu devices=%zu writes=%d", d->o.driver,
			 d->o.node_name, (long long)gen, json_array_size(slices), shown, r);
	if (taints && p->taints_dropped && p->taints_dropped(p->data)) {
		d->taints_dropped = true;
		log_error(
		    "The API server dropped the device taints (its DRADeviceTaints feature gate is off): unhealthy "
		    "devices are left out of the pool instead",
		    "driver=%s node=%s", d->o.driver, d->o.node_name);
		want_publish(d);
	}
}

/* ---- the loop ---------------------------------------------------------------------------------------- */

/* The health watcher's options from the daemon's. */
static struct dra_health_options health_options(const struct dra_daemon *d)
{
	return (struct dra_health_options){.root = d->o.host->root,
					   .kernel_log = d->o.kernel_log,
					   .policy = d->o.xids,
					   .quiet_ms = d->o.health_quiet_ms,
					   .mig_poll_ms = d->o.mig_poll_ms};
}

/* A new layout (MIG re-partition, a GPU gone): new devices, the faults kept, the watcher on the new node. */
static void rebuild(struct dra_daemon *d, struct node *n)
{
	struct dra_health_options ho = health_options(d);
	struct dra_devices devs, old;
	struct gerr err = {0};
	struct node *old_node;

	if (dra_devices_build(n, d->o.host->root, &devs, &err) < 0) {
		log_error("Cannot list the devices of the new layout; the old ones stay published", "error=\"%s\"",
			  err.msg);
		node_free(n);
		return;
	}
	apply_faults(d, &devs);
	dra_server_lock(d->srv);
	old = d->devices;
	old_node = d->node;
	d->devices = devs;
	d->node = n;
	dra_server_health_changed(d->srv);
	dra_server_unlock(d->srv);
	dra_devices_clear(&old);
	node_free(old_node);
	log_info("Device layout changed (MIG re-partition, GPU added or lost): publishing the new devices",
		 "devices=%zu", d->devices.n);
	log_devices(&d->devices);
	if (dra_health_restart(&d->health, d->nv, d->node, &ho, &err) < 0)
		log_error("Cannot watch the GPUs' health", "error=\"%s\"", err.msg);
	want_publish(d);
}

static int on_health_event(void *data)
{
	struct dra_daemon *d = data;
	struct node *n = NULL;
	struct dra_health_item *list = dra_health_take(&d->health, &n);
	bool changed = false;

	if (n)
		rebuild(d, n);
	dra_server_lock(d->srv);
	for (struct dra_health_item *it = list; it; it = it->next) {
		size_t k = dra_devices_set_health(&d->devices, it->uuid, it->gi, it->ci, it->healthy, it->taint_key,
						  it->taint_value, it->reason, time(NULL));

		track_fault(d, it);
		changed |= k > 0;
		for (size_t i = 0; k && i < d->devices.n; i++) {
			const struct dra_device *v = &d->devices.v[i];

			if (!dra_device_matches(v, it->uuid, it->gi, it->ci))
				continue;
			if (it->healthy)
				log_info("device is healthy again", "device=%s uuid=%s index=%u", v->name,
					 dra_device_uuid(v), v->mig ? v->mig->index : v->gpu->index);
			else
				log_warn("unhealthy device", "device=%s uuid=%s index=%u reason=\"%s\"", v->name,
					 dra_device_uuid(v), v->mig ? v->mig->index : v->gpu->index, it->reason);
		}
	}
	if (changed)
		dra_server_health_changed(d->srv);
	dra_server_unlock(d->srv);
	dra_health_items_free(list);
	if (changed)
		want_publish(d);
	return 0;
}

static int on_api_event(void *data)
{
	struct dra_daemon *d = data;

	if (d->o.publisher->changed(d->o.publisher->data))
		want_publish(d);
	return 0;
}

static void said_revive(void *data, const char *uid, int r, const char *msg)
{
	(void)data;
	if (r < 0)
		log_error("Cannot start the MPS control daemon of a prepared claim again", "uid=%s error=\"%s\"", uid,
			  msg);
	else
		log_warn("Started the dead MPS control daemon of a prepared claim again", "uid=%s", uid);
}

/* A socket file we serve is gone (someone removed it, a kubelet dir wiped): serve both again. */
static bool sockets_present(const struct dra_daemon *d)
{
	struct stat st;

	return lstat(d->reg_sock, &st) == 0 && S_ISSOCK(st.st_mode) && lstat(d->dra_sock, &st) == 0 &&
	       S_ISSOCK(st.st_mode);
}

static int serve(struct dra_daemon *d, struct gerr *err)
{
	return dra_server_start(
	    &(struct dra_server_options){
		.driver = d->o.driver, .reg_socket = d->reg_sock, .dra_socket = d->dra_sock, .endpoint = d->endpoint},
	    &ops, d, &d->srv, err);
}

static long long on_tick(void *data)
{
	struct dra_daemon *d = data;
	long long now = loop_now_ms();

	if (d->srv && !sockets_present(d)) {
		struct gerr err = {0};

		log_warn("A socket of the DRA plugin was removed: serving and registering again",
			 "registration=%s endpoint=%s", d->reg_sock, d->dra_sock);
		dra_server_stop(d->srv, 2000);
		d->srv = NULL;
		if (serve(d, &err) < 0)
			log_error("Cannot serve the DRA plugin again; trying again", "error=\"%s\"", err.msg);
	} else if (!d->srv) {
		struct gerr err = {0};

		if (serve(d, &err) < 0)
			log_error("Cannot serve the DRA plugin again; trying again", "error=\"%s\"", err.msg);
	}
	if (d->o.publisher && d->publish_due && now >= d->next_publish_ms)
		publish(d);
	if (now >= d->next_mps_ms) {
		d->next_mps_ms = now + MPS_CHECK_MS;
		dra_server_lock(d->srv);
		(void)dra_prepare_revive(&d->prep, said_revive, d);
		dra_server_unlock(d->srv);
	}
	if (d->publish_due)
		return MAX(0, MIN(d->next_publish_ms - loop_now_ms(), TICK_MS));
	return TICK_MS;
}

static const struct loop_ops loop_ops = {.tick = on_tick};

int dra_daemon_run(struct dra_daemon *d)
{
	return loop_run(d->loop);
}

/* ---- start and stop ------------------------------------------------------------------------------- */

/* NVML, the node, the devices to publish (each left out logged). */
static int load_node(struct dra_daemon *d, struct gerr *err)
{
	int r;

	if ((r = nvml_open_host(d->o.host, &d->nv, err)) < 0 ||
	    (r = node_load(d->nv, d->o.host->root, &d->node, err)) < 0 ||
	    (r = dra_devices_build(d->node, d->o.host->root, &d->devices, err)) < 0)
		return r;
	log_devices(&d->devices);
	return 0;
}

static void said_cleanup(void *data, const char *uid, int r, const char *msg)
{
	(void)data;
	if (r < 0)
		log_error("Cannot undo a half-prepared claim; kept for the next try", "uid=%s error=\"%s\"", uid, msg);
	else
		log_info("Undid a half-prepared claim", "uid=%s", uid);
}

/* The plugin dir (0750, as NVIDIA's), the checkpoint in it, half-prepared claims undone, MPS daemons revived. */
static int open_state(struct dra_daemon *d, struct gerr *err)
{
	static const char *const found_text[] = {[DRA_CP_NEW] = "new",
						 [DRA_CP_SAME] = "this boot's",
						 [DRA_CP_REBOOT] = "another boot's",
						 [DRA_CP_CORRUPT] = "unreadable"};
	_cleanup_free_ char *dir = root_path(d->o.host->root, d->plugin_dir), *path = NULL;
	struct gerr cperr = {0};
	enum dra_cp_found found;
	char boot[64] = "";
	size_t n;
	int r;

	if (!dir || asprintf(&path, "%s/%s", dir, DRA_CHECKPOINT_FILE) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	if ((r = mkdir_p(dir, 0750)) < 0)
		return gerr_set(err, -r, "cannot create the plugin dir %s: %s", dir, strerror(-r));
	if (dra_boot_id(d->o.host->root, boot, sizeof(boot)) < 0) {
		log_warn("Cannot read the boot id; a reboot will not be noticed by the checkpoint",
			 "file=/proc/sys/kernel/random/boot_id");
		boot[0] = '\0';
	}
	if ((r = dra_checkpoint_open(path, boot, &d->cp, &found, &cperr)) < 0)
		return gerr_set(err, -r, "%s", cperr.msg);
	if (found == DRA_CP_CORRUPT)
		log_error("The checkpoint was unreadable", "error=\"%s\"", cperr.msg);
	log_info("Checkpoint", "file=%s found=\"%s\" claims=%zu boot_id=%s", path, found_text[found],
		 json_object_size(dra_checkpoint_claims(d->cp)), boot);
	d->prep = (struct dra_prep){
	    .driver = d->o.driver,
	    .pool = d->o.node_name,
	    .devices = &d->devices,
	    .gates = &d->o.gates,
	    .cp = d->cp,
	    .cdi = {.driver = d->o.driver, .host = d->o.host, .hook_path = d->o.hook_path, .cdi_root = d->o.cdi_root},
	    .share = {.root = d->o.host->root, .driver_root = d->o.host->driver_root, .plugin_dir = d->plugin_dir},
	};
	n = dra_prepare_cleanup(&d->prep, said_cleanup, d);
	if (found == DRA_CP_REBOOT)
		log_info("The node rebooted since the checkpoint: its claims are prepared again when kubelet asks",
			 "undone=%zu", n);
	(void)dra_prepare_revive(&d->prep, said_revive, d);
	d->next_mps_ms = loop_now_ms() + MPS_CHECK_MS;
	return 0;
}

/* kubelet makes its registration dir; a missing one is a wrong path (or no kubelet), said before binding. */
static int check_registry(const struct dra_daemon *d, struct gerr *err)
{
	_cleanup_free_ char *dir = root_path(d->o.host->root, d->o.registry_dir);
	struct stat st;

	if (!dir)
		return gerr_set(err, ENOMEM, "out of memory");
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return gerr_set(err, ENOENT,
				"kubelet's plugin registration dir %s is not there: kubelet makes it; check "
				"--kubelet-registrar-directory-path (kubelet's --root-dir)",
				dir);
	return 0;
}

static int paths(struct dra_daemon *d, struct gerr *err)
{
	_cleanup_free_ char *reg = NULL;

	if (asprintf(&d->plugin_dir, "%s/%s", d->o.plugins_dir, d->o.driver) < 0 ||
	    asprintf(&d->endpoint, "%s/dra.sock", d->plugin_dir) < 0 ||
	    !(d->dra_sock = root_path(d->o.host->root, d->endpoint)) ||
	    asprintf(&reg, "%s/%s-reg.sock", d->o.registry_dir, d->o.driver) < 0 ||
	    !(d->reg_sock = root_path(d->o.host->root, reg)))
		return gerr_set(err, ENOMEM, "out of memory");
	return 0;
}

/* The loop: its signals, the health queue, the API server's changes. */
static int setup_loop(struct dra_daemon *d, const sigset_t *stop, struct gerr *err)
{
	int r = loop_new(stop, &loop_ops, d, &d->loop, err);

	if (r >= 0 && (r = loop_add_fd(d->loop, d->health.evfd, on_health_event, d)) >= 0 && d->o.publisher &&
	    d->o.publisher->fd >= 0)
		r = loop_add_fd(d->loop, d->o.publisher->fd, on_api_event, d);
	return r < 0 && !err->msg[0] ? gerr_set(err, -r, "%s", strerror(-r)) : r;
}

int dra_daemon_start(const struct dra_daemon_options *o, const sigset_t *stop, struct dra_daemon **ret)
{
	struct dra_daemon *d = calloc(1, sizeof(*d));
	struct dra_health_options ho;
	struct gerr err = {0};
	int r;

	*ret = NULL;
	if (!d)
		return log_error("Cannot start the DRA plugin", "error=\"out of memory\""), -ENOMEM;
	d->o = *o;
	d->health.evfd = -1;
	if ((r = paths(d, &err)) < 0 || (r = dra_health_init(&d->health, &err)) < 0 ||
	    (r = setup_loop(d, stop, &err)) < 0 || (r = check_registry(d, &err)) < 0 || (r = load_node(d, &err)) < 0 ||
	    (r = open_state(d, &err)) < 0 || (r = serve(d, &err)) < 0)
		goto fail;
	log_info("Serving DRA plugin", "driver=%s node=%s registration=%s endpoint=%s devices=%zu", o->driver,
		 o->node_name, d->reg_sock, d->endpoint, d->devices.n);
	ho = health_options(d);
	if (dra_health_restart(&d->health, d->nv, d->node, &ho, &err) < 0)
		log_error("Cannot watch the GPUs' health; devices stay published as they are", "error=\"%s\"", err.msg);
	else
		log_info("Watching the GPUs' health", "gpus=%zu taints=%s", d->node->n_gpus,
			 o->taints ? "true" : "false");
	if (o->publisher)
		publish(d);
	else
		log_warn("No Kubernetes API client: ResourceSlices are not published and claims cannot be prepared",
			 "driver=%s", o->driver);
	*ret = d;
	return 0;
fail:
	log_error("Cannot start the DRA plugin", "error=\"%s\"", err.msg);
	dra_daemon_stop(d);
	return r;
}

void dra_daemon_stop(struct dra_daemon *d)
{
	if (!d)
		return;
	dra_health_fini(&d->health); /* joins the watcher threads first: nothing queues after this */
	dra_server_stop(d->srv, 2000);
	dra_checkpoint_free(d->cp);
	dra_devices_clear(&d->devices);
	node_free(d->node);
	nvml_close(d->nv);
	loop_free(d->loop);
	free(d->faults);
	free(d->plugin_dir);
	free(d->endpoint);
	free(d->reg_sock);
	free(d->dra_sock);
	free(d);
}
