/* SPDX-License-Identifier: Apache-2.0 */
/* The device plugin yields to a registered DRA driver for NVIDIA GPUs (daemon_dra.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kube/gsrv.h"
#include "plugin/daemon_dra.h"
#include "util/log.h"
#include "util/macro.h"

/*
 * A live registration socket of the driver in kubelet's plugins_registry, the dir beside the
 * device-plugin dir: "<driver>-reg.sock", or "<driver>-<uid>-reg.sock" in a rolling update
 * (docs/reference/dra.md §2).
 */
static bool registered(struct daemon_dra *g, const char *device_plugin_path)
{
	const char *end = device_plugin_path + strlen(device_plugin_path);
	const size_t n = strlen(DAEMON_DRA_DRIVER), sfx = strlen("-reg.sock");
	char registry[4096];
	bool found = false;
	struct dirent *e;
	DIR *dir;

	while (end > device_plugin_path && end[-1] == '/')
		end--;
	while (end > device_plugin_path && end[-1] != '/')
		end--;
	/* /var/lib/kubelet/device-plugins/ -> /var/lib/kubelet/plugins_registry */
	snprintf(registry, sizeof(registry), "%.*splugins_registry", (int)(end - device_plugin_path),
		 device_plugin_path);
	if (!(dir = opendir(registry)))
		return false;
	while (!found && (e = readdir(dir))) {
		size_t l = strlen(e->d_name);
		char path[sizeof(registry) + 256];

		if (l < n + sfx || strncmp(e->d_name, DAEMON_DRA_DRIVER, n) != 0 ||
		    (e->d_name[n] != '-' && e->d_name[n] != '.') || !streq(e->d_name + l - sfx, "-reg.sock"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", registry, e->d_name);
		/* a socket left by a driver that died is no driver: only one that answers counts */
		if (gsrv_socket_live(path, NULL) == -EADDRINUSE) {
			snprintf(g->socket, sizeof(g->socket), "%s", path);
			found = true;
		}
	}
	closedir(dir);
	return found;
}

bool daemon_dra_yield(struct daemon_dra *g, const char *device_plugin_path, long long now)
{
	if (registered(g, device_plugin_path)) {
		if (!g->yielding)
			log_error(
			    "A DRA driver for NVIDIA GPUs is registered on this node: advertising no GPUs, so that "
			    "none is given out twice",
			    "driver=%s registration=%s hint=\"%s\"", DAEMON_DRA_DRIVER, g->socket,
			    "run either the device plugin or the DRA driver on a node (docs/reference/dra.md)");
		g->yielding = true;
		g->gone_ms = 0;
		return true;
	}
	if (!g->yielding)
		return false;
	if (!g->gone_ms)
		g->gone_ms = now;
	if (now - g->gone_ms < DAEMON_DRA_GONE_MS)
		return true;
	log_info("The DRA driver's registration is gone and kubelet has wiped its ResourceSlices: advertising the "
		 "GPUs again",
		 "driver=%s registration=%s", DAEMON_DRA_DRIVER, g->socket);
	g->yielding = false;
	return false;
}
