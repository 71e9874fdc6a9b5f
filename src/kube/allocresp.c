/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deviceplugin.pb-c.h"
#include "kube/allocresp.h"
#include "util/base64.h"
#include "util/enumtab.h"
#include "util/macro.h"

#define ALLOCRESP_MAX (1u << 20) /* kubelet keeps a few hundred bytes per container */

static const struct enum_name mode_names[] = {
    {ALLOCRESP_NONE, "none"},
    {ALLOCRESP_ENVVAR, "envvar"},
    {ALLOCRESP_VOLUME_MOUNTS, "volume-mounts"},
    {ALLOCRESP_CDI_ANNOTATIONS, "cdi-annotations"},
    {ALLOCRESP_CDI_CRI, "cdi-cri"},
};

const char *allocresp_mode_name(enum allocresp_mode m)
{
	return enum_to_name(mode_names, m, "?");
}

static void note(struct allocresp *a, enum allocresp_mode m, const char *example)
{
	if (m > a->mode) {
		a->mode = m;
		snprintf(a->example, sizeof(a->example), "%s", example ? example : "");
	}
}

/* The upstream plugin's markers (internal/plugin/server.go, docs/reference/cluster-events.md §1). */
static void classify(const V1beta1__ContainerAllocateResponse *r, struct allocresp *a)
{
	for (size_t i = 0; i < r->n_envs; i++) {
		const char *k = r->envs[i]->key, *v = r->envs[i]->value;

		if (!k || !v || !streq(k, "NVIDIA_VISIBLE_DEVICES") || !*v)
			continue;
		if (streq(v, "/var/run/nvidia-container-devices")) {
			a->volume_mounts = true;
			note(a, ALLOCRESP_VOLUME_MOUNTS, v);
		} else {
			a->envvar = true;
			note(a, ALLOCRESP_ENVVAR, v);
		}
	}
	for (size_t i = 0; i < r->n_mounts; i++)
		if (r->mounts[i]->container_path &&
		    !strncmp(r->mounts[i]->container_path, "/var/run/nvidia-container-devices/", 34)) {
			a->volume_mounts = true;
			note(a, ALLOCRESP_VOLUME_MOUNTS, r->mounts[i]->container_path);
		}
	for (size_t i = 0; i < r->n_annotations; i++)
		if (r->annotations[i]->key && r->annotations[i]->value &&
		    !strncmp(r->annotations[i]->key, "cdi.k8s.io/", 11)) {
			a->cdi_annotations = true;
			note(a, ALLOCRESP_CDI_ANNOTATIONS, r->annotations[i]->value);
		}
	for (size_t i = 0; i < r->n_cdi_devices; i++)
		if (r->cdi_devices[i]->name && *r->cdi_devices[i]->name) {
			a->cdi_cri = true;
			note(a, ALLOCRESP_CDI_CRI, r->cdi_devices[i]->name);
		}
}

int allocresp_decode(const char *b64, struct allocresp *a, struct gerr *err)
{
	_cleanup_free_ uint8_t *buf = NULL;
	V1beta1__ContainerAllocateResponse *r;
	size_t len = 0;
	int ret;

	memset(a, 0, sizeof(*a));
	if (strlen(b64) > ALLOCRESP_MAX)
		return gerr_set(err, EFBIG, "AllocResp is larger than %u bytes", ALLOCRESP_MAX);
	ret = base64_decode(b64, strlen(b64), &buf, &len);
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0)
		return gerr_set(err, EINVAL, "AllocResp is not base64");
	r = v1beta1__container_allocate_response__unpack(NULL, len, buf);
	if (!r)
		return gerr_set(err, EINVAL, "AllocResp is not a ContainerAllocateResponse (%zu bytes)", len);
	classify(r, a);
	v1beta1__container_allocate_response__free_unpacked(r, NULL);
	return 0;
}
