/* SPDX-License-Identifier: Apache-2.0 */
/* The one NVML event watcher; see watch.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvml/node.h"
#include "nvml/watch.h"

#define NO_ID 0xFFFFFFFFu /* nvmlEventData_t gi/ci when the event names no instance (nvml.h) */

struct slot {
	unsigned index;
	char uuid[NODE_UUID_MAX];
	nvmlDevice_t h; /* the handle registered, what events carry in .device */
	bool registered;
};

struct nvml_watch {
	struct nvml *nv;
	unsigned long long types;
	nvmlEventSet_t set;
	pthread_mutex_t lock; /* guards slots: registration may run while the loop maps an event */
	struct slot *slots;
	size_t n;
	int stop_pipe[2];
	atomic_bool stop;
};

int nvml_watch_new(struct nvml *nv, unsigned long long types, size_t n_gpus, struct nvml_watch **ret, struct gerr *err)
{
	_cleanup_(nvml_watch_freep) struct nvml_watch *w = NULL;
	nvmlReturn_t rc;

	if (!NVML_HAS(nv, event_set_create) || !NVML_HAS(nv, device_register_events) || !NVML_HAS(nv, event_set_wait) ||
	    !NVML_HAS(nv, event_set_free))
		return gerr_set(err, ENOSYS, "this NVML has no event API");
	w = calloc(1, sizeof(*w));
	if (!w)
		return gerr_set(err, ENOMEM, "out of memory");
	w->nv = nv;
	w->types = types;
	w->stop_pipe[0] = w->stop_pipe[1] = -1;
	pthread_mutex_init(&w->lock, NULL);
	w->slots = calloc(n_gpus ? n_gpus : 1, sizeof(*w->slots));
	if (!w->slots)
		return gerr_set(err, ENOMEM, "out of memory");
	w->n = n_gpus;
	if (pipe2(w->stop_pipe, O_CLOEXEC) < 0)
		return gerr_set(err, errno, "pipe: %s", strerror(errno));
	rc = nv->event_set_create(&w->set);
	if (rc != NVML_SUCCESS) {
		w->set = NULL;
		return gerr_set(err, -nvml_errno(rc), "nvmlEventSetCreate failed: %s", nvml_strerror(nv, rc));
	}
	*ret = TAKE_PTR(w);
	return 0;
}

void nvml_watch_set_gpu(struct nvml_watch *w, size_t i, unsigned index, const char *uuid)
{
	if (i >= w->n)
		return;
	pthread_mutex_lock(&w->lock);
	w->slots[i].index = index;
	snprintf(w->slots[i].uuid, sizeof(w->slots[i].uuid), "%s", uuid ? uuid : "");
	pthread_mutex_unlock(&w->lock);
}

bool nvml_watch_registered(struct nvml_watch *w, size_t i)
{
	bool r;

	if (i >= w->n)
		return false;
	pthread_mutex_lock(&w->lock);
	r = w->slots[i].registered;
	pthread_mutex_unlock(&w->lock);
	return r;
}

int nvml_watch_register(struct nvml_watch *w, size_t i, struct gerr *err)
{
	const struct nvml *nv = w->nv;
	unsigned long long supported = w->types;
	struct slot *s;
	nvmlDevice_t h = NULL;
	nvmlReturn_t r;
	int e;

	if (i >= w->n)
		return gerr_set(err, EINVAL, "no GPU slot %zu", i);
	pthread_mutex_lock(&w->lock);
	s = &w->slots[i];
	if (s->registered) {
		pthread_mutex_unlock(&w->lock);
		return 0;
	}
	r = nv->device_get_handle_by_index(s->index, &h);
	if (r == NVML_SUCCESS && NVML_HAS(nv, device_get_supported_event_types))
		r = nv->device_get_supported_event_types(h, &supported);
	if (r == NVML_SUCCESS && !(supported & w->types))
		r = NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS)
		r = nv->device_register_events(h, w->types & supported, w->set);
	if (h)
		s->h = h;
	/* NOT_SUPPORTED: nothing will ever be delivered for it, so it is done, not failed */
	s->registered = r == NVML_SUCCESS || r == NVML_ERROR_NOT_SUPPORTED;
	pthread_mutex_unlock(&w->lock);
	if (r == NVML_SUCCESS)
		return 0;
	/* the two answers with a meaning of their own are reserved to the one NVML code each */
	e = r == NVML_ERROR_GPU_IS_LOST ? ENODEV : r == NVML_ERROR_NOT_SUPPORTED ? EOPNOTSUPP : -nvml_errno(r);
	if ((e == ENODEV || e == EOPNOTSUPP) && r != NVML_ERROR_GPU_IS_LOST && r != NVML_ERROR_NOT_SUPPORTED)
		e = EIO;
	return gerr_set(err, e, "%s", nvml_strerror(nv, r));
}

/* The slot of an event's device: by the handle we registered, else by UUID (a library that
 * re-issues handles). -1 when it is none of ours. */
static long slot_of(struct nvml_watch *w, nvmlDevice_t dev)
{
	char uuid[NODE_UUID_MAX];
	long found = -1;

	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < w->n && found < 0; i++)
		if (w->slots[i].h && w->slots[i].h == dev)
			found = (long)i;
	pthread_mutex_unlock(&w->lock);
	if (found >= 0 || w->nv->device_get_uuid(dev, uuid, sizeof(uuid)) != NVML_SUCCESS)
		return found;
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < w->n && found < 0; i++)
		if (w->slots[i].uuid[0] && streq(w->slots[i].uuid, uuid))
			found = (long)i;
	pthread_mutex_unlock(&w->lock);
	return found;
}

/* Classify one event; false when it is of no type we deliver. */
static bool classify(const nvmlEventData_t *e, struct nvml_watch_event *ev)
{
	if (e->eventType & nvmlEventTypeXidCriticalError)
		ev->kind = NVML_WATCH_XID;
	else if (e->eventType & nvmlEventTypeDoubleBitEccError)
		ev->kind = NVML_WATCH_ECC_DBE;
	else if (e->eventType & nvmlEventTypeSingleBitEccError)
		ev->kind = NVML_WATCH_ECC_SBE;
	else if (e->eventType & nvmlEventMigConfigChange)
		ev->kind = NVML_WATCH_MIG_CHANGE;
	else
		return false;
	ev->xid = ev->kind == NVML_WATCH_XID ? (unsigned)e->eventData : 0;
	ev->gi = e->gpuInstanceId == NO_ID ? -1 : (int)e->gpuInstanceId;
	ev->ci = e->computeInstanceId == NO_ID ? -1 : (int)e->computeInstanceId;
	return true;
}

/* Sleep ms unless interrupted; true when interrupted. */
static bool wait_stop(struct nvml_watch *w, unsigned ms)
{
	struct pollfd p = {.fd = w->stop_pipe[0], .events = POLLIN};

	if (atomic_load(&w->stop))
		return true;
	(void)poll(&p, 1, (int)ms);
	return atomic_load(&w->stop);
}

void nvml_watch_run(struct nvml_watch *w, unsigned wait_ms, nvml_watch_cb cb, void *userdata)
{
	bool failing = false;

	while (!atomic_load(&w->stop)) {
		nvmlEventData_t e = {0};
		struct nvml_watch_event ev = {.gi = -1, .ci = -1};
		nvmlReturn_t r = w->nv->event_set_wait(w->set, &e, wait_ms);
		long slot;

		if (r == NVML_ERROR_TIMEOUT)
			continue;
		if (r != NVML_SUCCESS) {
			ev.kind = NVML_WATCH_WAIT_ERROR;
			ev.error = nvml_errno(r);
			ev.first = !failing;
			ev.message = nvml_strerror(w->nv, r);
			failing = true;
			cb(&ev, userdata);
			/* recovery: wait a slice and wait again; the set and its registrations stay */
			if (wait_stop(w, wait_ms))
				break;
			continue;
		}
		failing = false;
		if (!classify(&e, &ev) || (slot = slot_of(w, e.device)) < 0)
			continue;
		ev.gpu = (size_t)slot;
		cb(&ev, userdata);
	}
}

void nvml_watch_interrupt(struct nvml_watch *w)
{
	atomic_store(&w->stop, true);
	if (w->stop_pipe[1] >= 0)
		(void)!write(w->stop_pipe[1], "x", 1);
}

void nvml_watch_free(struct nvml_watch *w)
{
	if (!w)
		return;
	if (w->set)
		w->nv->event_set_free(w->set);
	if (w->stop_pipe[0] >= 0)
		close(w->stop_pipe[0]);
	if (w->stop_pipe[1] >= 0)
		close(w->stop_pipe[1]);
	free(w->slots);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
