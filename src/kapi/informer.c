/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The informer: client-go's reflector in small (docs/reference/kube-api.md §2). One thread per
 * informer LISTs, then WATCHes from the list's resourceVersion with bookmarks, keeps the objects in a
 * cache and queues the keys that changed; the daemon's loop polls an eventfd and drains the queue.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "kapi/internal.h"
#include "util/macro.h"

#define DEFAULT_MAX_EVENT     (4u << 20) /* etcd's default request limit is 1.5 MiB: room to spare */
#define DEFAULT_WATCH_TIMEOUT 300        /* reflector.go defaultMinWatchTimeout: 5 minutes */
/* reflector.go: NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0) */
#define BACKOFF_INITIAL_NS (800 * 1000000LL)
#define BACKOFF_MAX_NS     (30 * 1000000000LL)
#define BACKOFF_RESET_NS   (120 * 1000000000LL)

struct kapi_informer {
	struct kapi *k;
	struct kapi_resource res;
	char *ns, *label_selector, *field_selector;
	size_t max_event;
	unsigned min_watch_timeout_s;
	void (*notify)(void *userdata);
	void *userdata;

	struct kapi_cancel cancel;
	pthread_t thread;
	int efd;
	uint64_t rng;
	int64_t backoff_ns, last_backoff_ns;

	pthread_mutex_t lock; /* what follows */
	json_t *cache;        /* key -> object */
	json_t *dirty;        /* key -> true, in the order they changed */
	bool signalled;       /* efd written since the last empty kapi_informer_next() */
	struct kapi_informer_status st;
};

/* -- the queue ------------------------------------------------------------------------------- */

/* Under the lock: make the fd readable (once) and tell the caller to notify. */
static bool wake_locked(struct kapi_informer *inf)
{
	if (!inf->signalled) {
		uint64_t one = 1;

		inf->signalled = write(inf->efd, &one, sizeof(one)) == sizeof(one);
	}
	return inf->notify != NULL;
}

static void wake(struct kapi_informer *inf, bool notify)
{
	if (notify)
		inf->notify(inf->userdata);
}

/* "ns/name" or "name" (client-go's MetaNamespaceKeyFunc); NULL when the object has no name. */
static char *key_of(const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	char *key = NULL;

	if (!name || !*name)
		return NULL;
	if (ns && *ns)
		return asprintf(&key, "%s/%s", ns, name) < 0 ? NULL : key;
	return strdup(name);
}

static const char *rv_of(const json_t *obj)
{
	const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));

	return rv ? rv : "";
}

static void set_rv_locked(struct kapi_informer *inf, const char *rv)
{
	if (*rv)
		snprintf(inf->st.resource_version, sizeof(inf->st.resource_version), "%s", rv);
}

static int mark_locked(struct kapi_informer *inf, const char *key)
{
	json_object_del(inf->dirty, key); /* a key changed again moves to the end */
	return json_object_set_new(inf->dirty, key, json_true()) < 0 ? -ENOMEM : 0;
}

/* The LIST replaces the cache: keys added, changed (another resourceVersion) or gone are queued. */
static int replace(struct kapi_informer *inf, json_t *list)
{
	json_t *items = json_object_get(list, "items"), *fresh = json_object(), *obj, *old;
	const char *key;
	size_t i;
	bool notify;
	int r = fresh ? 0 : -ENOMEM;

	json_array_foreach (items, i, obj) {
		_cleanup_free_ char *k = key_of(obj);

		if (r >= 0 && k)
			r = json_object_set(fresh, k, obj) < 0 ? -ENOMEM : 0;
	}
	if (r < 0) {
		json_decref(fresh);
		return r;
	}
	pthread_mutex_lock(&inf->lock);
	json_object_foreach (inf->cache, key, old)
		if (r >= 0 && !json_object_get(fresh, key))
			r = mark_locked(inf, key);
	json_object_foreach (fresh, key, obj) {
		old = json_object_get(inf->cache, key);
		if (r >= 0 && (!old || !streq(rv_of(old), rv_of(obj))))
			r = mark_locked(inf, key);
	}
	json_decref(inf->cache);
	inf->cache = fresh;
	set_rv_locked(inf, rv_of(list));
	inf->st.synced = true;
	inf->st.lists++;
	inf->st.error = 0;
	inf->st.message[0] = '\0';
	notify = wake_locked(inf);
	pthread_mutex_unlock(&inf->lock);
	wake(inf, notify);
	return r;
}

static void failed(struct kapi_informer *inf, int r, const struct gerr *err)
{
	bool notify;

	pthread_mutex_lock(&inf->lock);
	inf->st.failures++;
	inf->st.error = r < 0 ? -r : r;
	snprintf(inf->st.message, sizeof(inf->st.message), "%s", err->msg[0] ? err->msg : strerror(inf->st.error));
	notify = wake_locked(inf);
	pthread_mutex_unlock(&inf->lock);
	wake(inf, notify);
}

/* -- one watch ------------------------------------------------------------------------------- */

struct watch_ctx {
	struct kapi_informer *inf;
	struct kapi_stream stream;
	struct gerr *err;
	unsigned events;
};

static const struct kapi_what *watch_what(const struct kapi_informer *inf, struct kapi_what *w)
{
	*w = (struct kapi_what){.verb = "watch", .res = &inf->res, .ns = inf->ns};
	return w;
}

static int on_event(enum kapi_event_type type, json_t *obj, void *userdata)
{
	struct watch_ctx *x = userdata;
	struct kapi_informer *inf = x->inf;
	_cleanup_free_ char *key = NULL;
	struct kapi_what w;
	bool notify = false;
	int r = 0;

	if (type == KAPI_EVENT_ERROR) {
		struct kapi_status st;

		r = kapi_status_error(watch_what(inf, &w), obj, x->err);
		/* "too old resource version": the server no longer has what we would resume from */
		if (kapi_status_decode(obj, &st) == 0 &&
		    (st.code == 410 || kapi_status_errno(st.code, st.reason) == ETIME))
			return -ETIME;
		return r;
	}
	x->events++;
	if (type != KAPI_EVENT_BOOKMARK && !(key = key_of(obj)))
		return gerr_set(x->err, EBADMSG, "watch %s: an event's object has no metadata.name", inf->res.resource);
	pthread_mutex_lock(&inf->lock);
	inf->st.error = 0; /* the watch works again */
	inf->st.message[0] = '\0';
	switch (type) {
	case KAPI_EVENT_BOOKMARK:
		inf->st.bookmarks++;
		break;
	case KAPI_EVENT_DELETED:
		inf->st.events++;
		json_object_del(inf->cache, key);
		r = mark_locked(inf, key);
		notify = wake_locked(inf);
		break;
	default:
		inf->st.events++;
		r = json_object_set(inf->cache, key, obj) < 0 ? -ENOMEM : mark_locked(inf, key);
		notify = wake_locked(inf);
		break;
	}
	set_rv_locked(inf, rv_of(obj));
	pthread_mutex_unlock(&inf->lock);
	wake(inf, notify);
	return r;
}

static int on_watch_body(const char *data, size_t len, void *userdata)
{
	struct watch_ctx *x = userdata;

	return kapi_stream_feed(&x->stream, data, len, on_event, x, x->err);
}

static uint64_t next_random(struct kapi_informer *inf)
{
	/* xorshift64*: jitter only */
	inf->rng ^= inf->rng >> 12;
	inf->rng ^= inf->rng << 25;
	inf->rng ^= inf->rng >> 27;
	return inf->rng * 2685821657736338717ULL;
}

/* uniform in [0, 1) */
static double random01(struct kapi_informer *inf)
{
	return (double)(next_random(inf) >> 11) / 9007199254740992.0;
}

/*
 * One WATCH from the current resourceVersion until the server ends it: 0 when it ended normally, -ETIME
 * when the resourceVersion expired (relist), -ECANCELED when stopped, else the failure.
 */
static int watch_once(struct kapi_informer *inf, struct gerr *err)
{
	struct watch_ctx x = {.inf = inf, .err = err};
	struct kapi_call c = {.method = "GET", .sink = on_watch_body, .sink_data = &x};
	unsigned timeout = (unsigned)(inf->min_watch_timeout_s * (1.0 + random01(inf)));
	char rv[sizeof(inf->st.resource_version)], tos[16];
	int64_t start = kapi_now_ns();
	int r;

	watch_what(inf, &c.what);
	pthread_mutex_lock(&inf->lock);
	memcpy(rv, inf->st.resource_version, sizeof(rv));
	inf->st.watches++;
	pthread_mutex_unlock(&inf->lock);
	snprintf(tos, sizeof(tos), "%u", timeout);
	/* the server ends the watch after timeoutSeconds; our own limit only catches a server that vanished */
	c.timeout_s = (long)timeout + 60;
	kapi_stream_init(&x.stream, inf->max_event);
	r = kapi_url(inf->k, &c.what, &c.url, err);
	if (r >= 0)
		r = kapi_query_add(&c.url, "watch", "1");
	if (r >= 0 && inf->label_selector)
		r = kapi_query_add(&c.url, "labelSelector", inf->label_selector);
	if (r >= 0 && inf->field_selector)
		r = kapi_query_add(&c.url, "fieldSelector", inf->field_selector);
	if (r >= 0)
		r = kapi_query_add(&c.url, "resourceVersion", rv);
	if (r >= 0)
		r = kapi_query_add(&c.url, "allowWatchBookmarks", "true");
	if (r >= 0)
		r = kapi_query_add(&c.url, "timeoutSeconds", tos);
	if (r >= 0)
		r = kapi_call_run(inf->k, &c, &inf->cancel, err);
	if (r >= 0 && kapi_stream_pending(&x.stream))
		r = gerr_set(err, ECONNRESET, "watch %s: the stream ended inside an event", inf->res.resource);
	/* a watch that ends within a second with nothing in it is a failure (reflector.go VeryShortWatchError) */
	if (r >= 0 && !x.events && kapi_now_ns() - start < 1000000000)
		r = gerr_set(err, EPROTO, "watch %s: ended at once with no event", inf->res.resource);
	kapi_stream_done(&x.stream);
	kapi_call_done(&c);
	return r;
}

/* client-go's backoff: 800 ms doubling to 30 s, back to 800 ms after 2 minutes without one, plus up to
 * as much again of jitter */
static int backoff(struct kapi_informer *inf)
{
	int64_t now = kapi_now_ns();

	if (!inf->backoff_ns || now - inf->last_backoff_ns > BACKOFF_RESET_NS)
		inf->backoff_ns = BACKOFF_INITIAL_NS;
	else
		inf->backoff_ns = MIN(inf->backoff_ns * 2, BACKOFF_MAX_NS);
	inf->last_backoff_ns = now;
	return kapi_nap(inf->k, &inf->cancel, inf->backoff_ns + (int64_t)(random01(inf) * (double)inf->backoff_ns));
}

static void *run(void *arg)
{
	struct kapi_informer *inf = arg;
	const struct kapi_list_options lo = {.label_selector = inf->label_selector,
					     .field_selector = inf->field_selector};
	bool need_list = true;
	int r;

	for (;;) {
		struct gerr err = {0};

		if (need_list) {
			json_t *list = NULL;

			r = kapi_list_all(inf->k, &inf->res, inf->ns, &lo, &inf->cancel, &list, &err);
			if (r >= 0) {
				r = replace(inf, list);
				json_decref(list);
			}
			if (r == -ECANCELED)
				break;
			if (r < 0) {
				failed(inf, r, &err);
				if (backoff(inf) < 0)
					break;
				continue;
			}
			need_list = false;
		}
		r = watch_once(inf, &err);
		if (r == -ECANCELED)
			break;
		if (r == -ETIME) {
			pthread_mutex_lock(&inf->lock);
			inf->st.expired++;
			pthread_mutex_unlock(&inf->lock);
			need_list = true;
			continue;
		}
		if (r < 0) {
			failed(inf, r, &err);
			if (backoff(inf) < 0)
				break;
		}
	}
	return NULL;
}

/* -- the interface --------------------------------------------------------------------------- */

static void informer_free(struct kapi_informer *inf)
{
	if (inf->efd >= 0)
		close(inf->efd);
	kapi_cancel_done(inf->k, &inf->cancel);
	json_decref(inf->cache);
	json_decref(inf->dirty);
	free(inf->ns);
	free(inf->label_selector);
	free(inf->field_selector);
	free((char *)inf->res.group);
	free((char *)inf->res.version);
	free((char *)inf->res.resource);
	free((char *)inf->res.kind);
	pthread_mutex_destroy(&inf->lock);
	free(inf);
}

static int copy_str(const char *s, char **ret)
{
	*ret = s ? strdup(s) : NULL;
	return s && !*ret ? -ENOMEM : 0;
}

int kapi_informer_start(struct kapi *k, const struct kapi_informer_options *o, struct kapi_informer **ret,
			struct gerr *err)
{
	struct kapi_informer *inf;
	const struct kapi_resource *r = o->resource;
	char *path = NULL;
	int e;

	if (!r)
		return gerr_set(err, EINVAL, "informer: no resource");
	/* the request path is checked now, so that a bad name fails here rather than on the thread */
	e = kapi_path(r, o->ns, NULL, NULL, &path, err);
	free(path);
	if (e < 0)
		return e;
	inf = calloc(1, sizeof(*inf));
	if (!inf)
		return -ENOMEM;
	inf->efd = -1;
	pthread_mutex_init(&inf->lock, NULL);
	inf->k = k;
	inf->res.namespaced = r->namespaced;
	inf->max_event = o->max_event ? o->max_event : DEFAULT_MAX_EVENT;
	inf->min_watch_timeout_s = o->min_watch_timeout_s ? o->min_watch_timeout_s : DEFAULT_WATCH_TIMEOUT;
	inf->notify = o->notify;
	inf->userdata = o->userdata;
	inf->cache = json_object();
	inf->dirty = json_object();
	inf->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (getrandom(&inf->rng, sizeof(inf->rng), GRND_NONBLOCK) != sizeof(inf->rng) || !inf->rng)
		inf->rng = (uint64_t)kapi_now_ns() | 1;
	if (copy_str(r->group, (char **)&inf->res.group) < 0 || copy_str(r->version, (char **)&inf->res.version) < 0 ||
	    copy_str(r->resource, (char **)&inf->res.resource) < 0 || copy_str(r->kind, (char **)&inf->res.kind) < 0 ||
	    copy_str(o->ns, &inf->ns) < 0 || copy_str(o->label_selector, &inf->label_selector) < 0 ||
	    copy_str(o->field_selector, &inf->field_selector) < 0 || !inf->cache || !inf->dirty) {
		informer_free(inf);
		return -ENOMEM;
	}
	if (inf->efd < 0) {
		e = -errno;
		informer_free(inf);
		return gerr_set(err, -e, "informer: eventfd: %s", strerror(-e));
	}
	e = kapi_cancel_init(k, &inf->cancel);
	if (e >= 0)
		e = -pthread_create(&inf->thread, NULL, run, inf);
	if (e < 0) {
		informer_free(inf);
		return gerr_set(err, -e, "informer %s: cannot start its thread: %s", r->resource, strerror(-e));
	}
	*ret = inf;
	return 0;
}

void kapi_informer_stop(struct kapi_informer *inf)
{
	if (!inf)
		return;
	kapi_cancel_stop(inf->k, &inf->cancel);
	pthread_join(inf->thread, NULL);
	informer_free(inf);
}

int kapi_informer_fd(const struct kapi_informer *inf)
{
	return inf->efd;
}

int kapi_informer_next(struct kapi_informer *inf, char **ret_key, json_t **ret_obj)
{
	void *it;
	char *key;
	uint64_t v;

	pthread_mutex_lock(&inf->lock);
	it = json_object_iter(inf->dirty);
	if (!it) {
		/* drained: the fd stays quiet until something new is queued */
		if (inf->signalled)
			(void)!read(inf->efd, &v, sizeof(v));
		inf->signalled = false;
		pthread_mutex_unlock(&inf->lock);
		return 0;
	}
	key = strdup(json_object_iter_key(it));
	if (!key) {
		pthread_mutex_unlock(&inf->lock);
		return -ENOMEM;
	}
	json_object_del(inf->dirty, key);
	*ret_obj = json_incref(json_object_get(inf->cache, key));
	pthread_mutex_unlock(&inf->lock);
	*ret_key = key;
	return 1;
}

json_t *kapi_informer_get(struct kapi_informer *inf, const char *key)
{
	json_t *obj;

	pthread_mutex_lock(&inf->lock);
	obj = json_incref(json_object_get(inf->cache, key));
	pthread_mutex_unlock(&inf->lock);
	return obj;
}

json_t *kapi_informer_list(struct kapi_informer *inf)
{
	json_t *arr = json_array(), *obj;
	const char *key;

	pthread_mutex_lock(&inf->lock);
	json_object_foreach (inf->cache, key, obj)
		if (arr && json_array_append(arr, obj) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	pthread_mutex_unlock(&inf->lock);
	return arr;
}

void kapi_informer_status(struct kapi_informer *inf, struct kapi_informer_status *ret)
{
	pthread_mutex_lock(&inf->lock);
	*ret = inf->st;
	pthread_mutex_unlock(&inf->lock);
}
