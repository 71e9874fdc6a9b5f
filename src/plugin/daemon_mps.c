/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MPS fails safe: a resource shared with MPS lists its replicas only while the resource's MPS
 * control daemon is ready (the root's .ready file and an answer to
 * get_default_active_thread_percentage, as upstream asks it before serving). Until then, and as
 * soon as it stops answering, kubelet gets an empty list and requests fail, with the reason in
 * the log. Upstream checks once before serving and then never again; we check every few seconds.
 * Facts: docs/reference/device-plugin.md §5.1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plugin/daemon_int.h"
#include "plugin/mps.h"
#include "util/fileio.h"
#include "util/log.h"

#define MPS_CHECK_MS 5000
#define MPS_PROBE_MS 1000 /* the main loop waits for the answer: a hung daemon must not hold it long */

/* The MPS root as this process sees it: --mps-root under --root, else upstream's container mount /mps. */
static char *plugin_mps_root(const struct plugin_config *cfg)
{
	_cleanup_free_ char *host = root_path(cfg->root, cfg->mps_root);
	char *ctr;
	struct stat st;

	if (!host || (stat(host, &st) == 0 && S_ISDIR(st.st_mode)))
		return TAKE_PTR(host);
	ctr = root_path(cfg->root, MPS_CONTAINER_ROOT);
	if (ctr && stat(ctr, &st) == 0 && S_ISDIR(st.st_mode))
		return ctr;
	free(ctr);
	return TAKE_PTR(host);
}

void daemon_mps_reset(struct daemon *d)
{
	d->n_mps = 0;
	if (d->cfg.sharing != SHARING_MPS || !d->rs)
		return;
	for (size_t i = 0; i < d->rs->n && d->n_mps < ELEMENTSOF(d->mps); i++) {
		struct daemon_mps *m = &d->mps[d->n_mps++];

		snprintf(m->res, sizeof(m->res), "%s", d->rs->res[i].name);
		/* not listed until the first check says otherwise */
		snprintf(m->why, sizeof(m->why), "not checked yet");
		m->checked = false;
	}
	daemon_mps_check(d, true);
}

const char *daemon_mps_reason(const struct daemon *d, const char *name)
{
	for (size_t i = 0; i < d->n_mps; i++)
		if (streq(d->mps[i].res, name))
			return d->mps[i].why;
	return NULL;
}

static void set_state(struct daemon *d, struct daemon_mps *m, const char *why)
{
	bool was_ready = m->checked && !m->why[0], first = !m->checked;

	if (m->checked && streq(m->why, why))
		return;
	if (d->g)
		gsrv_lock(d->g);
	snprintf(m->why, sizeof(m->why), "%s", why);
	m->checked = true;
	for (size_t i = 0; i < d->n_sv; i++)
		if (streq(d->sv[i].ctx.res->name, m->res))
			gsrv_notify(d->sv[i].srv);
	if (d->g)
		gsrv_unlock(d->g);
	if (!why[0])
		log_info("MPS daemon is healthy", "resource=%s", m->res);
	else if (first || was_ready)
		log_warn("Waiting for the MPS control daemon; advertising no devices for this resource",
			 "resource=%s reason=\"%s\" recheck_s=%d", m->res, why, MPS_CHECK_MS / 1000);
	else
		log_warn("MPS control daemon still not ready", "resource=%s reason=\"%s\"", m->res, why);
}

void daemon_mps_check(struct daemon *d, bool force)
{
	_cleanup_free_ char *root = NULL, *bin = NULL;

	if (!d->n_mps || (!force && daemon_now_ms() < d->next_mps_ms))
		return;
	d->next_mps_ms = daemon_now_ms() + MPS_CHECK_MS;
	root = plugin_mps_root(&d->cfg);
	bin = mps_find_tool(&d->cfg, MPS_CONTROL_BIN);
	for (size_t i = 0; i < d->n_mps; i++) {
		struct gerr err = {0};

		if (!root) {
			set_state(d, &d->mps[i], "out of memory");
			continue;
		}
		set_state(d, &d->mps[i], mps_ready(bin, root, d->mps[i].res, MPS_PROBE_MS, &err) < 0 ? err.msg : "");
	}
}
