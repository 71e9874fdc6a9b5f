/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA driver's daemon (dra.h): the owner of its state and its run loop, so the one place in dra/
 * that logs above debug (docs/HACKING.md §1). The gRPC thread calls prepare/unprepare here with the
 * server group's lock held: claims are handled one at a time, and nothing else touches the state
 * while the servers run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dra/devices.h"
#include "dra/dra.h"
#include "dra/prepare.h"
#include "dra/server.h"
#include "nvml/node.h"
#include "util/fileio.h"
#include "util/log.h"

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
};

static int on_prepare(void *data, const struct dra_claim_ref *ref, json_t **ret, struct gerr *err)
{
	struct dra_daemon *d = data;
	json_auto_t *claim = NULL;
	int r;

	if (!d->o.claims) {
		r = gerr_set(
		    err, ENOTCONN,
		    "ResourceClaim %s/%s: this gpulet dra cannot read ResourceClaims from the API server (it has "
		    "no Kubernetes API client), so it cannot prepare claims",
		    ref->ns, ref->name);
	} else if ((r = d->o.claims->get(d->o.claims->data, ref->ns, ref->name, &claim, err)) < 0) {
		gerr_prefix(err, "ResourceClaim %s/%s: ", ref->ns, ref->name);
	} else
		r = dra_prepare(&d->prep, claim, ref, ret, err);
	if (r < 0)
		log_error("Cannot prepare claim", "claim=%s/%s uid=%s error=\"%s\"", ref->ns, ref->name, ref->uid,
			  err->msg);
	else
		log_info("Prepared claim", "claim=%s/%s uid=%s devices=%zu", ref->ns, ref->name, ref->uid,
			 json_array_size(*ret));
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

static const struct dra_server_ops ops = {
    .prepare = on_prepare, .unprepare = on_unprepare, .registered = on_registered};

static void said_cleanup(void *data, const char *uid, int r, const char *msg)
{
	(void)data;
	if (r < 0)
		log_error("Cannot undo a half-prepared claim; kept for the next try", "uid=%s error=\"%s\"", uid, msg);
	else
		log_info("Undid a half-prepared claim", "uid=%s", uid);
}

/* NVML, the node, the devices to publish (each left out logged). */
static int load_node(struct dra_daemon *d, struct gerr *err)
{
	json_auto_t *slices = NULL;
	int r;

	if ((r = nvml_open_host(d->o.host, &d->nv, err)) < 0 ||
	    (r = node_load(d->nv, d->o.host->root, &d->node, err)) < 0 ||
	    (r = dra_devices_build(d->node, d->o.host->root, &d->devices, err)) < 0)
		return r;
	for (size_t i = 0; i < json_array_size(d->devices.left_out); i++)
		log_warn("Device not published", "reason=\"%s\"",
			 json_string_value(json_array_get(d->devices.left_out, i)));
	for (size_t i = 0; i < d->devices.n; i++) {
		const struct dra_device *v = &d->devices.v[i];

		log_info("DRA device", "device=%s uuid=%s index=%u", v->name, dra_device_uuid(v),
			 v->mig ? v->mig->index : v->gpu->index);
	}
	/* built (and so checked against the API's limits) now; published by the API client */
	r = dra_slices_build(
	    &d->devices,
	    &(struct dra_slice_options){.driver = d->o.driver, .node_name = d->o.node_name, .generation = 1}, &slices,
	    err);
	if (r < 0)
		return gerr_prefix(err, "building the ResourceSlice: ");
	if (d->o.publisher) {
		struct gerr perr = {0};

		/* a failure is said, not fatal: the API client retries, prepare does not need the slices */
		if (d->o.publisher->publish(d->o.publisher->data, slices, &perr) < 0)
			log_error("Cannot publish the ResourceSlices", "driver=%s node=%s error=\"%s\"", d->o.driver,
				  d->o.node_name, perr.msg);
		else
			log_info("Published the ResourceSlices", "driver=%s node=%s slices=%zu devices=%zu",
				 d->o.driver, d->o.node_name, json_array_size(slices), d->devices.n);
	}
	return 0;
}

/* The plugin dir (0750, as NVIDIA's), the checkpoint in it, half-prepared claims undone. */
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

int dra_daemon_start(const struct dra_daemon_options *o, struct dra_daemon **ret)
{
	struct dra_daemon *d = calloc(1, sizeof(*d));
	struct gerr err = {0};
	int r;

	*ret = NULL;
	if (!d)
		return log_error("Cannot start the DRA plugin", "error=\"out of memory\""), -ENOMEM;
	d->o = *o;
	if (asprintf(&d->plugin_dir, "%s/%s", o->plugins_dir, o->driver) < 0 ||
	    asprintf(&d->endpoint, "%s/dra.sock", d->plugin_dir) < 0 ||
	    !(d->dra_sock = root_path(o->host->root, d->endpoint))) {
		r = gerr_set(&err, ENOMEM, "out of memory");
		goto fail;
	}
	{
		_cleanup_free_ char *reg = NULL;

		if (asprintf(&reg, "%s/%s-reg.sock", o->registry_dir, o->driver) < 0 ||
		    !(d->reg_sock = root_path(o->host->root, reg))) {
			r = gerr_set(&err, ENOMEM, "out of memory");
			goto fail;
		}
	}
	if ((r = check_registry(d, &err)) < 0 || (r = load_node(d, &err)) < 0 || (r = open_state(d, &err)) < 0)
		goto fail;
	r = dra_server_start(
	    &(struct dra_server_options){
		.driver = o->driver, .reg_socket = d->reg_sock, .dra_socket = d->dra_sock, .endpoint = d->endpoint},
	    &ops, d, &d->srv, &err);
	if (r < 0)
		goto fail;
	log_info("Serving DRA plugin", "driver=%s node=%s registration=%s endpoint=%s devices=%zu", o->driver,
		 o->node_name, d->reg_sock, d->endpoint, d->devices.n);
	if (!o->claims || !o->publisher)
		log_warn("No Kubernetes API client: ResourceSlices are not published and claims cannot be prepared",
			 "driver=%s", o->driver);
	*ret = d;
	return 0;
fail:
	log_error("Cannot start the DRA plugin", "error=\"%s\"", err.msg);
	dra_daemon_stop(d);
	return r;
}

void dra_daemon_run(struct dra_daemon *d, const sigset_t *stop)
{
	int sig = 0;

	while (sigwait(stop, &sig) != 0)
		;
	log_info("Received signal, shutting down.", "signal=%s", strsignal(sig));
}

void dra_daemon_stop(struct dra_daemon *d)
{
	if (!d)
		return;
	dra_server_stop(d->srv, 2000);
	dra_checkpoint_free(d->cp);
	dra_devices_clear(&d->devices);
	node_free(d->node);
	nvml_close(d->nv);
	free(d->plugin_dir);
	free(d->endpoint);
	free(d->reg_sock);
	free(d->dra_sock);
	free(d);
}
