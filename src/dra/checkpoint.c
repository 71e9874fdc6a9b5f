/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The checkpoint file (checkpoint.h). NVIDIA's driver keeps the same facts (per claim
 * PrepareStarted/PrepareCompleted, the allocation, the CDI ids, the node's boot id: checkpointv.go,
 * device_state.go; docs/reference/dra.md §7) in its own format; gpulet writes its own file name, so
 * neither ever reads the other's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dra/checkpoint.h"
#include "util/fileio.h"

#define CP_KIND    "gpulet-dra-checkpoint"
#define CP_VERSION 1
#define CP_MAX     (16 << 20)

struct dra_checkpoint {
	char *path;
	json_t *doc;
	unsigned long saves;
};

bool dra_claim_completed(const json_t *rec)
{
	const char *s = json_string_value(json_object_get(rec, "state"));

	return s && streq(s, DRA_STATE_COMPLETED);
}

int dra_boot_id(const char *root, char *buf, size_t size)
{
	_cleanup_free_ char *path = root_path(root, "/proc/sys/kernel/random/boot_id");

	if (!path)
		return -ENOMEM;
	return read_line_file(path, buf, size);
}

static json_t *empty_doc(const char *boot_id)
{
	return json_pack("{s:s, s:i, s:s, s:{}}", "kind", CP_KIND, "version", CP_VERSION, "nodeBootID", boot_id,
			 "claims");
}

/* The shape every reader relies on; a record of another state is not ours to guess at. */
static int check_doc(const json_t *doc, struct gerr *err)
{
	const json_t *claims = json_object_get(doc, "claims");
	const char *uid;
	json_t *rec;

	if (!json_is_object(doc) || !json_is_string(json_object_get(doc, "kind")) ||
	    !streq(json_string_value(json_object_get(doc, "kind")), CP_KIND))
		return gerr_set(err, EINVAL, "not a gpulet DRA checkpoint (kind is not %s)", CP_KIND);
	if (json_integer_value(json_object_get(doc, "version")) != CP_VERSION)
		return gerr_set(err, EINVAL, "checkpoint version %lld, this gpulet reads %d",
				(long long)json_integer_value(json_object_get(doc, "version")), CP_VERSION);
	if (!json_is_object(claims) || !json_is_string(json_object_get(doc, "nodeBootID")))
		return gerr_set(err, EINVAL, "no claims object or nodeBootID");
	json_object_foreach ((json_t *)claims, uid, rec) {
		const char *st = json_string_value(json_object_get(rec, "state"));

		if (!json_is_object(rec) || !st || (!streq(st, DRA_STATE_STARTED) && !streq(st, DRA_STATE_COMPLETED)))
			return gerr_set(err, EINVAL, "claim %s: no valid state", uid);
	}
	return 0;
}

static int load(const char *path, json_t **ret, struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	json_error_t je;
	json_t *doc;
	size_t len;
	int r = read_file(path, CP_MAX, &text, &len, err);

	if (r < 0)
		return r;
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return gerr_set(err, EINVAL, "%s:%d:%d: %s", path, je.line, je.column, je.text);
	if (check_doc(doc, err) < 0) {
		json_decref(doc);
		return gerr_prefix(err, "%s: ", path);
	}
	*ret = doc;
	return 0;
}

int dra_checkpoint_open(const char *path, const char *boot_id, struct dra_checkpoint **ret,
			enum dra_cp_found *ret_found, struct gerr *err)
{
	struct dra_checkpoint *cp = calloc(1, sizeof(*cp));
	enum dra_cp_found found = DRA_CP_SAME;
	struct gerr lerr = {0};
	json_t *doc = NULL;
	int r;

	if (!cp || !(cp->path = strdup(path))) {
		free(cp);
		return gerr_set(err, ENOMEM, "out of memory");
	}
	r = load(path, &doc, &lerr);
	if (r == -ENOENT)
		found = DRA_CP_NEW;
	else if (r < 0) {
		_cleanup_free_ char *aside = NULL;

		found = DRA_CP_CORRUPT;
		if (asprintf(&aside, "%s.corrupt", path) < 0 || rename(path, aside) < 0) {
			dra_checkpoint_free(cp);
			return gerr_set(err, errno ? errno : ENOMEM, "%s; and it cannot be moved aside: %s", lerr.msg,
					strerror(errno));
		}
		gerr_set(err, -r, "%s; moved aside to %s, starting with no prepared claims", lerr.msg, aside);
	} else {
		const char *was = json_string_value(json_object_get(doc, "nodeBootID"));

		if (boot_id[0] && was[0] && !streq(was, boot_id)) {
			const char *uid;
			json_t *rec;

			/* /var/run is gone, the MPS daemons and GPU settings too: nothing of it is prepared now */
			found = DRA_CP_REBOOT;
			json_object_foreach (json_object_get(doc, "claims"), uid, rec) {
				json_object_set_new(rec, "state", json_string(DRA_STATE_STARTED));
				json_object_set_new(rec, "rebooted", json_true());
			}
		}
		json_object_set_new(doc, "nodeBootID", json_string(boot_id));
	}
	cp->doc = doc ? doc : empty_doc(boot_id);
	if (!cp->doc) {
		dra_checkpoint_free(cp);
		return gerr_set(err, ENOMEM, "out of memory");
	}
	if (found != DRA_CP_SAME && (r = dra_checkpoint_save(cp, found == DRA_CP_CORRUPT ? NULL : err)) < 0) {
		dra_checkpoint_free(cp);
		return r;
	}
	*ret = cp;
	*ret_found = found;
	return 0;
}

void dra_checkpoint_free(struct dra_checkpoint *cp)
{
	if (!cp)
		return;
	json_decref(cp->doc);
	free(cp->path);
	free(cp);
}

int dra_checkpoint_save(struct dra_checkpoint *cp, struct gerr *err)
{
	_cleanup_free_ char *text = json_dumps(cp->doc, JSON_INDENT(1) | JSON_SORT_KEYS);

	if (!text)
		return gerr_set(err, ENOMEM, "out of memory");
	cp->saves++;
	return write_file_atomic(cp->path, text, strlen(text), 0600, err);
}

unsigned long dra_checkpoint_saves(const struct dra_checkpoint *cp)
{
	return cp->saves;
}

json_t *dra_checkpoint_claims(const struct dra_checkpoint *cp)
{
	return json_object_get(cp->doc, "claims");
}

json_t *dra_checkpoint_claim(const struct dra_checkpoint *cp, const char *uid)
{
	return json_object_get(dra_checkpoint_claims(cp), uid);
}

int dra_checkpoint_put(struct dra_checkpoint *cp, const char *uid, json_t *rec, struct gerr *err)
{
	if (!rec || json_object_set_new(dra_checkpoint_claims(cp), uid, rec) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	return dra_checkpoint_save(cp, err);
}

int dra_checkpoint_del(struct dra_checkpoint *cp, const char *uid, struct gerr *err)
{
	if (json_object_del(dra_checkpoint_claims(cp), uid) < 0)
		return 0;
	return dra_checkpoint_save(cp, err);
}
