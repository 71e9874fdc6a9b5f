/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The prepare/unprepare state machine (prepare.h). NVIDIA's DeviceState.Prepare()/Unprepare()
 * (device_state.go at v25.12.0; the boot-id rule of the main branch; docs/reference/dra.md §7) with
 * these differences: a prepared claim's spec is written again when asked (NVIDIA returns from the
 * checkpoint and a wiped /var/run/cdi stays wiped), a half-prepared one is undone at once and at
 * start, and every step that fails says which claim and why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dra/prepare.h"

bool dra_uid_valid(const char *uid)
{
	size_t l = uid ? strlen(uid) : 0;

	return l > 0 && l <= 64 && strspn(uid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") == l;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Undo a record: its groups (last first), then its spec. 0, or the first failure (the record is kept). */
static int undo(struct dra_prep *p, const char *uid, const json_t *rec, struct gerr *err)
{
	const json_t *groups = json_object_get(rec, "groups");
	int r;

	for (size_t i = json_array_size(groups); i-- > 0;)
		if ((r = dra_share_undo(&p->share, json_array_get(groups, i), err)) < 0)
			return r;
	if ((r = dra_cdi_remove(&p->cdi, uid, err)) < 0)
		return r;
	return 0;
}

static int undo_and_forget(struct dra_prep *p, const char *uid, struct gerr *err)
{
	json_t *rec = dra_checkpoint_claim(p->cp, uid);
	int r;

	if (!rec)
		return 0;
	if ((r = undo(p, uid, rec, err)) < 0)
		return r;
	return dra_checkpoint_del(p->cp, uid, err);
}

int dra_unprepare(struct dra_prep *p, const char *uid, struct gerr *err)
{
	int r = undo_and_forget(p, uid, err);

	return r < 0 ? gerr_prefix(err, "unpreparing claim %s: ", uid) : 0;
}

/* The devices of a record and of a parsed claim are the same (names, in order). */
static bool same_devices(const json_t *rec, const struct dra_claim *cl)
{
	const json_t *devs = json_object_get(rec, "devices");

	if (json_array_size(devs) != cl->n_results)
		return false;
	for (size_t i = 0; i < cl->n_results; i++) {
		const char *name = json_string_value(json_object_get(json_array_get(devs, i), "deviceName"));

		if (!name || !streq(name, cl->results[i].device))
			return false;
	}
	return true;
}

/* Another prepared claim holds one of ours (neither with admin access): NVIDIA's validateNoOverlappingPreparedDevices()
 */
static int check_overlap(struct dra_prep *p, const struct dra_claim *cl, struct gerr *err)
{
	const char *uid;
	json_t *rec;

	json_object_foreach (dra_checkpoint_claims(p->cp), uid, rec) {
		size_t i;
		json_t *d;

		if (streq(uid, cl->uid) || !dra_claim_completed(rec))
			continue;
		json_array_foreach (json_object_get(rec, "devices"), i, d) {
			const char *name = json_string_value(json_object_get(d, "deviceName"));

			if (!name || json_is_true(json_object_get(d, "adminAccess")))
				continue;
			for (size_t k = 0; k < cl->n_results; k++)
				if (!cl->results[k].admin && streq(cl->results[k].device, name))
					return gerr_set(err, EBUSY,
							"device %s is already prepared for claim %s/%s (%s); a device "
							"is given to one claim at a time",
							name,
							json_string_value(json_object_get(rec, "namespace")) ?: "",
							json_string_value(json_object_get(rec, "name")) ?: "", uid);
		}
	}
	return 0;
}

/* The spec of a record: each device with its group's edits. */
static int write_spec(struct dra_prep *p, const char *uid, const json_t *rec, struct gerr *err)
{
	const json_t *devs = json_object_get(rec, "devices"), *groups = json_object_get(rec, "groups");
	size_t n = json_array_size(devs);
	_cleanup_free_ struct dra_spec_device *sd = calloc(n ? n : 1, sizeof(*sd));
	json_auto_t *edits = json_array();
	int r;

	if (!sd || !edits)
		return gerr_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < json_array_size(groups); i++)
		json_array_append_new(edits, dra_share_edits(&p->share, json_array_get(groups, i)) ?: json_null());
	for (size_t i = 0; i < n; i++) {
		const json_t *d = json_array_get(devs, i);
		const json_t *e = json_array_get(edits, (size_t)json_integer_value(json_object_get(d, "group")));

		sd[i] = (struct dra_spec_device){.uuid = json_string_value(json_object_get(d, "uuid")),
						 .name = json_string_value(json_object_get(d, "deviceName")),
						 .edits = json_is_object(e) ? e : NULL};
		if (!sd[i].uuid || !sd[i].name)
			return gerr_set(err, EINVAL, "checkpoint record of claim %s has a device without uuid or name",
					uid);
	}
	r = dra_cdi_write(p->devices->node, &p->cdi, uid, sd, n, err);
	return r < 0 ? gerr_prefix(err, "writing the claim's CDI spec: ") : 0;
}

/* What kubelet gets: one entry per device, its request's main name, pool, name, CDI ids. */
static json_t *answer(const json_t *rec)
{
	json_t *out = json_array(), *d;
	size_t i;

	json_array_foreach (json_object_get(rec, "devices"), i, d)
		json_array_append_new(out, json_pack("{s:O, s:O, s:O, s:O}", "requests", json_object_get(d, "requests"),
						     "poolName", json_object_get(d, "poolName"), "deviceName",
						     json_object_get(d, "deviceName"), "cdiDeviceIDs",
						     json_object_get(d, "cdiDeviceIDs")));
	return out;
}

/* The record a prepare starts with: the devices and their groups, nothing done yet. */
static json_t *new_record(struct dra_prep *p, const struct dra_claim *cl, struct gerr *err)
{
	json_auto_t *rec = json_pack("{s:s, s:s, s:s, s:[], s:[]}", "state", DRA_STATE_STARTED, "namespace", cl->ns,
				     "name", cl->name, "devices", "groups");
	char main[256], id[512];

	if (!rec)
		return gerr_set(err, ENOMEM, "out of memory"), NULL;
	for (size_t i = 0; i < cl->n_results; i++) {
		const struct dra_result *res = &cl->results[i];
		const struct dra_device *d = dra_devices_find(p->devices, res->device);

		dra_request_main(res->request, main, sizeof(main));
		if (dra_cdi_device_id(p->driver, cl->uid, res->device, id, sizeof(id)) < 0)
			return gerr_set(err, ENAMETOOLONG, "CDI id of %s too long", res->device), NULL;
		if (json_array_append_new(json_object_get(rec, "devices"),
					  json_pack("{s:[s], s:s, s:s, s:s, s:b, s:I, s:[s], s:s}", "requests", main,
						    "poolName", p->pool, "deviceName", res->device, "uuid",
						    dra_device_uuid(d), "adminAccess", res->admin, "group",
						    (json_int_t)res->group, "cdiDeviceIDs", id, "type",
						    res->type == DRA_DEV_MIG ? "mig" : "gpu")) < 0)
			return gerr_set(err, ENOMEM, "out of memory"), NULL;
	}
	return TAKE_PTR(rec);
}

/* The group's devices' UUIDs, sorted: all of them, and the whole GPUs among them. */
static int group_uuids(const struct dra_prep *p, const struct dra_claim *cl, size_t g, const char ***ret_all,
		       size_t *n_all, const char ***ret_gpus, size_t *n_gpus)
{
	const char **all = calloc(cl->n_results + 1, sizeof(*all)), **gpus = calloc(cl->n_results + 1, sizeof(*gpus));

	*n_all = *n_gpus = 0;
	if (!all || !gpus) {
		free(all);
		free(gpus);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cl->n_results; i++) {
		const struct dra_device *d = dra_devices_find(p->devices, cl->results[i].device);

		if (cl->results[i].group != g)
			continue;
		all[(*n_all)++] = dra_device_uuid(d);
		if (d->type == DRA_DEV_GPU)
			gpus[(*n_gpus)++] = d->gpu->uuid;
	}
	qsort(all, *n_all, sizeof(*all), cmp_str);
	qsort(gpus, *n_gpus, sizeof(*gpus), cmp_str);
	*ret_all = all;
	*ret_gpus = gpus;
	return 0;
}

/* Apply every group's sharing, recording each in rec (saved) as it goes. */
static int apply_groups(struct dra_prep *p, const struct dra_claim *cl, json_t *rec, struct gerr *err)
{
	for (size_t g = 0; g < cl->n_groups; g++) {
		_cleanup_free_ const char **all = NULL, **gpus = NULL;
		json_t *done = NULL;
		size_t n_all, n_gpus;
		int r;

		if (group_uuids(p, cl, g, &all, &n_all, &gpus, &n_gpus) < 0)
			return gerr_set(err, ENOMEM, "out of memory");
		r = dra_share_apply(&p->share, cl->uid, g, &cl->groups[g].sharing, gpus, n_gpus, all, n_all, &done,
				    err);
		if (done)
			json_array_append_new(json_object_get(rec, "groups"), done);
		if (r < 0)
			return gerr_prefix(err, "%s sharing (%s): ", dra_strategy_name(cl->groups[g].sharing.strategy),
					   cl->groups[g].source);
		/* on disk before the next group: a crash from here undoes what this one did (a group
		 * without sharing did nothing to undo, and costs no write) */
		if (cl->groups[g].sharing.strategy != DRA_SHARE_NONE && (r = dra_checkpoint_save(p->cp, err)) < 0)
			return r;
	}
	return 0;
}

/* A device the health watcher calls unhealthy is not handed to a new claim (admin access aside). */
static int check_healthy(const struct dra_prep *p, const struct dra_claim *cl, struct gerr *err)
{
	for (size_t i = 0; i < cl->n_results; i++) {
		const struct dra_device *d = dra_devices_find(p->devices, cl->results[i].device);

		if (d && d->unhealthy && !cl->results[i].admin)
			return gerr_set(err, EIO,
					"device %s (%s) is unhealthy: %s; kubelet tries again, and it is prepared once "
					"the GPU recovers",
					d->name, dra_device_uuid(d),
					d->health_reason[0] ? d->health_reason : "no reason given");
	}
	return 0;
}

static int prepare_fresh(struct dra_prep *p, const struct dra_claim *cl, json_t **ret, struct gerr *err)
{
	json_t *rec;
	int r;

	if ((r = check_healthy(p, cl, err)) < 0 || (r = check_overlap(p, cl, err)) < 0)
		return r;
	if (!(rec = new_record(p, cl, err)))
		return -ENOMEM;
	/* PrepareStarted on disk before anything is done: a crash from here on is undone at start */
	if ((r = dra_checkpoint_put(p->cp, cl->uid, rec, err)) < 0)
		return r;
	r = apply_groups(p, cl, rec, err);
	if (r >= 0)
		r = write_spec(p, cl->uid, rec, err);
	if (r >= 0) {
		json_object_set_new(rec, "state", json_string(DRA_STATE_COMPLETED));
		r = dra_checkpoint_save(p->cp, err);
	}
	if (r < 0) {
		struct gerr uerr = {0};

		/* undo what was done: kubelet retries the claim, and the retry starts from nothing */
		if (undo_and_forget(p, cl->uid, &uerr) < 0 && err) {
			char first[GERR_MAX];

			snprintf(first, sizeof(first), "%s", err->msg);
			gerr_set(err, -r,
				 "%s; and undoing it failed (it stays PrepareStarted and is undone at the next "
				 "try): %s",
				 first, uerr.msg);
		}
		return r;
	}
	*ret = answer(rec);
	return *ret ? 0 : gerr_set(err, ENOMEM, "out of memory");
}

int dra_prepare(struct dra_prep *p, const json_t *claim, const struct dra_claim_ref *ref, json_t **ret,
		struct gerr *err)
{
	struct dra_claim_check chk = {.driver = p->driver, .pool = p->pool, .devices = p->devices, .gates = p->gates};
	struct dra_claim cl = {0};
	json_t *rec;
	int r;

	if (!dra_uid_valid(ref->uid))
		return gerr_set(err, EINVAL, "claim uid \"%s\" is not a Kubernetes uid", ref->uid);
	if ((r = dra_claim_parse(claim, ref, &chk, &cl, err)) < 0)
		return r;
	rec = dra_checkpoint_claim(p->cp, cl.uid);
	if (rec && dra_claim_completed(rec) && same_devices(rec, &cl)) {
		/* prepared before: the same answer; the spec again in case /var/run/cdi lost it (idempotent) */
		r = write_spec(p, cl.uid, rec, err);
		if (r >= 0 && !(*ret = answer(rec)))
			r = gerr_set(err, ENOMEM, "out of memory");
	} else {
		/* half-prepared (a crash, a reboot, a failed try) or stale (other devices now): start over */
		r = undo_and_forget(p, cl.uid, err);
		if (r >= 0)
			r = prepare_fresh(p, &cl, ret, err);
	}
	dra_claim_clear(&cl);
	return r < 0 ? gerr_prefix(err, "ResourceClaim %s/%s: ", ref->ns, ref->name) : 0;
}

size_t dra_prepare_cleanup(struct dra_prep *p, void (*said)(void *data, const char *uid, int r, const char *msg),
			   void *data)
{
	json_auto_t *uids = json_array();
	const char *uid;
	json_t *rec, *u;
	size_t n = 0, i;

	/* collected first: undoing deletes from the object being walked */
	json_object_foreach (dra_checkpoint_claims(p->cp), uid, rec)
		if (!dra_claim_completed(rec))
			json_array_append_new(uids, json_string(uid));
	json_array_foreach (uids, i, u) {
		struct gerr err = {0};
		int r = undo_and_forget(p, json_string_value(u), &err);

		n += r >= 0;
		if (said)
			said(data, json_string_value(u), r, err.msg);
	}
	return n;
}

/* The UUIDs of a record's group g, sorted as dra_share_apply() got them. */
static size_t record_group_uuids(const json_t *rec, size_t g, const char **out, size_t max)
{
	size_t n = 0, i;
	json_t *d;

	json_array_foreach (json_object_get(rec, "devices"), i, d)
		if ((size_t)json_integer_value(json_object_get(d, "group")) == g && n < max &&
		    json_string_value(json_object_get(d, "uuid")))
			out[n++] = json_string_value(json_object_get(d, "uuid"));
	qsort(out, n, sizeof(*out), cmp_str);
	return n;
}

size_t dra_prepare_revive(struct dra_prep *p, void (*said)(void *data, const char *uid, int r, const char *msg),
			  void *data)
{
	const char *uid;
	json_t *rec;
	size_t n = 0;

	json_object_foreach (dra_checkpoint_claims(p->cp), uid, rec) {
		const json_t *groups = json_object_get(rec, "groups");

		if (!dra_claim_completed(rec))
			continue;
		for (size_t g = 0; g < json_array_size(groups); g++) {
			const char *uuids[64];
			size_t k = record_group_uuids(rec, g, uuids, ELEMENTSOF(uuids));
			struct gerr err = {0};
			int r = dra_share_revive(&p->share, json_array_get(groups, g), uuids, k, &err);

			n += r > 0;
			if (r != 0 && said)
				said(data, uid, r, err.msg);
		}
	}
	return n;
}
