/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MPS fails safe: a resource shared with MPS lists its replicas only while the resource's MPS
 * control daemon is ready (the root's .ready file and an answer to
 * get_default_active_thread_percentage, as upstream asks it before serving). Until then, and as
 * soon as it stops answering, kubelet gets an empty list and requests fail, with the reason in
 * the log. Upstream checks once before serving and then never again; we check every few seconds.
 * Facts: docs/reference/device-plugin.md §5.1; the interface is daemon_mps.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plugin/daemon_mps.h"
#include "plugin/mps.h"
#include "util/fileio.h"
#include "util/log.h"

#define MPS_CHECK_MS 5000
#define MPS_PROBE_MS 1000 /* the main loop waits for the answer: a hung daemon must not hold it long */

/* The MPS root as this process sees it: --mps-root under --root, else upstream's container mount /mps. */
static char *plugin_mps_root(const struct plugin_config *cfg)
{
	_cleanup_free_ char *host = root_path(cfg->host->root, cfg->mps_root);
	char *ctr;
	struct stat st;

	if (!host || (stat(host, &st) == 0 && S_ISDIR(st.st_mode)))
		return TAKE_PTR(host);
	ctr = root_path(cfg->host->root, MPS_CONTAINER_ROOT);
	if (ctr && stat(ctr, &st) == 0 && S_ISDIR(st.st_mode))
		return ctr;
	free(ctr);
	return TAKE_PTR(host);
}

void daemon_mps_reset(struct daemon_mps *m, const struct plugin_config *cfg, const struct resource_set *rs,
		      struct daemon_servers *s)
{
	m->n = 0;
	if (cfg->sharing.strategy != SHARING_MPS || !rs)
		return;
	for (size_t i = 0; i < rs->n && m->n < ELEMENTSOF(m->v); i++) {
		struct daemon_mps_res *mr = &m->v[m->n++];

		snprintf(mr->res, sizeof(mr->res), "%s", rs->res[i].name);
		/* not listed until the first check says otherwise */
		snprintf(mr->why, sizeof(mr->why), "not checked yet");
		mr->checked = false;
	}
	daemon_mps_check(m, cfg, s, true);
}

const char *daemon_mps_reason(const struct daemon_mps *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (streq(m->v[i].res, name))
			return m->v[i].why;
	return NULL;
}

static void set_state(struct daemon_servers *s, struct daemon_mps_res *m, const char *why)
{
	bool was_ready = m->checked && !m->why[0], first = !m->checked;

	if (m->checked && streq(m->why, why))
		return;
	daemon_servers_lock(s);
	snprintf(m->why, sizeof(m->why), "%s", why);
	m->checked = true;
	daemon_servers_notify(s, m->res);
	daemon_servers_unlock(s);
	if (!why[0])
		log_info("MPS daemon is healthy", "resource=%s", m->res);
	else if (first || was_ready)
		log_warn("Waiting for the MPS control daemon; advertising no devices for this resource",
			 "resource=%s reason=\"%s\" recheck_s=%d", m->res, why, MPS_CHECK_MS / 1000);
	else
		log_warn("MPS control daemon still not ready", "resource=%s reason=\"%s\"", m->res, why);
}

void daemon_mps_check(struct daemon_mps *m, const struct plugin_config *cfg, struct daemon_servers *s, bool force)
{
	_cleanup_free_ char *root = NULL, *bin = NULL;

	if (!m->n || (!force && loop_now_ms() < m->next_ms))
		return;
	m->next_ms = loop_now_ms() + MPS_CHECK_MS;
	root = plugin_mps_root(cfg);
	bin = mps_find_tool(cfg->host, MPS_CONTROL_BIN);
	for (size_t i = 0; i < m->n; i++) {
		struct gerr err = {0};

		if (!root) {
			set_state(s, &m->v[i], "out of memory");
			continue;
		}
		set_state(s, &m->v[i], mps_ready(bin, root, m->v[i].res, MPS_PROBE_MS, &err) < 0 ? err.msg : "");
	}
}
