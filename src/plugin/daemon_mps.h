/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's wait for MPS (daemon_mps.c): each resource shared with MPS lists its replicas only
 * while its MPS control daemon is ready (docs/reference/device-plugin.md §5.1). A unit of the
 * plugin daemon (daemon.c owns it). The gRPC thread reads each resource's reason (through
 * dp_ctx.mps_unready) under the servers' lock, which is where it changes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "plugin/config.h"
#include "plugin/daemon_serve.h"
#include "plugin/resources.h"

#define DAEMON_MPS_MAX 8

struct daemon_mps {
	struct daemon_mps_res {
		char res[128];
		char why[512]; /* "" ready */
		bool checked;
	} v[DAEMON_MPS_MAX];
	size_t n;
	long long next_ms;
};

/*
 * After the resources changed to rs: the MPS resources to watch (none unless cfg shares with MPS),
 * checked now, before they are served (s serves nothing then, or the resources kept).
 */
void daemon_mps_reset(struct daemon_mps *m, const struct plugin_config *cfg, const struct resource_set *rs,
		      struct daemon_servers *s);
/* What dp_ctx.mps_unready points to for resource name: NULL when it is not shared with MPS. */
const char *daemon_mps_reason(const struct daemon_mps *m, const char *name);
/* Check again when due (force: now); a change is logged and sent to kubelet through s. */
void daemon_mps_check(struct daemon_mps *m, const struct plugin_config *cfg, struct daemon_servers *s, bool force);
