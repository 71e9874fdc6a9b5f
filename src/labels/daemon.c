/* SPDX-License-Identifier: Apache-2.0 */
/* `gpulet labels`' daemon: GFD's labelling loop on the one daemon loop (daemon.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "labels/daemon.h"
#include "nvml/nvml.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/opt.h"
#include "util/sig.h"

/* What a labelling pass ended with; PASS_RETRY: the API server did not take the object (a daemon tries
 * again soon rather than dying: the object from the last pass still holds the labels). */
enum pass { PASS_OK, PASS_FAILED, PASS_REFUSED, PASS_RETRY };

#define RETRY_MS     5000 /* after PASS_RETRY, doubling up to the sleep interval */
#define RETRY_MAX_MS 300000

struct labels_daemon {
	const struct labels_daemon_options *o;
	int (*reload)(void *data, struct gerr *err);
	void *reload_data;
	struct nvml *nv; /* NULL until it loads */
	struct loop *loop;
	int code; /* the exit code once the loop stops */
	/* --use-node-feature-api with an API server: the object (labels/nodefeature.h); NULL: the file */
	struct nodefeature *nf;
	bool fallback;      /* the API serves no NodeFeatures: the file holds the labels */
	bool file_dropped;  /* the object holds them and the feature file is gone (or was never there) */
	bool written;       /* the object was written once: later writes log at debug */
	bool vgpu_noted;    /* the vGPU note (a short PCI config space) was logged: once per process */
	long long retry_ms; /* the wait before the next try after PASS_RETRY; 0: none pending */
};

static int write_file(const struct labels_daemon_options *o, const char *text)
{
	_cleanup_free_ char *path = NULL;
	struct gerr err = {0};
	int r;

	if (o->out)
		return fputs(text, o->out) < 0 || fflush(o->out) != 0 ? -EIO : 0;
	path = root_path(o->host->root, o->output);
	if (!path)
		return -ENOMEM;
	r = write_file_atomic(path, text, strlen(text), 0644, &err);
	if (r < 0)
		log_error("cannot write the feature file", "path=%s error=\"%s\"", path, err.msg);
	return r;
}

/*
 * The object holds the labels: a feature file at the output path (ours from a fallback, or from a
 * release that wrote files) would have NFD's local source publish them a second time, and keep them
 * after the release is gone.
 */
static void drop_file(struct labels_daemon *d)
{
	_cleanup_free_ char *path = root_path(d->o->host->root, d->o->output);

	if (!path || d->file_dropped)
		return;
	if (unlink(path) == 0)
		log_info("Removed the feature file: the NodeFeature object holds the labels", "path=%s", path);
	else if (errno != ENOENT)
		log_warn("cannot remove the feature file; NFD's local source still reads it", "path=%s error=\"%s\"",
			 path, strerror(errno));
	d->file_dropped = true;
}

/* GFD's NodeFeature output; the feature file while the API serves no NodeFeatures (NFD's CRD absent). */
static int write_object(struct labels_daemon *d, const struct label_set *s, const char *text)
{
	struct gerr err = {0};
	int r = nodefeature_publish(d->nf, s, &err);

	if (nodefeature_owner_warning(d->nf, &err))
		log_warn("Failed to resolve owner references: the NodeFeature object has no owners and stays after "
			 "the release until a later pass reads them",
			 "pod=%s error=\"%s\"", d->o->nfd->pod_name ?: "", err.msg);
	if (r == -EOPNOTSUPP) {
		if (!d->fallback)
			log_warn(
			    "The API server does not serve NodeFeatures (NFD's CRD nodefeatures.nfd.k8s-sigs.io is not "
			    "installed): writing the feature file instead, which NFD's local source reads",
			    "path=%s", d->o->output);
		d->fallback = true;
		d->file_dropped = false;
		return write_file(d->o, text);
	}
	if (r < 0) {
		log_error("cannot write the NodeFeature object", "name=%s namespace=%s error=\"%s\"",
			  nodefeature_name(d->nf), d->o->nfd->ns, err.msg);
		/* the API server away (a restart), also while the file stands in: the pass is retried */
		return -EAGAIN;
	}
	if (r > 0)
		log_emit(d->written ? LOG_LVL_DEBUG : LOG_LVL_INFO, "NodeFeature object written",
			 "name=%s namespace=%s labels=%zu", nodefeature_name(d->nf), d->o->nfd->ns, s->n);
	d->written |= r > 0;
	d->fallback = false;
	drop_file(d);
	return 0;
}

/* 0, -EAGAIN when the API server did not take the object (PASS_RETRY), other -errno */
static int write_output(struct labels_daemon *d, const struct label_set *s, const char *text)
{
	return d->nf ? write_object(d, s, text) : write_file(d->o, text);
}

/* One labelling pass: read the node and the host, compute, write. */
static enum pass label_once(struct labels_daemon *d)
{
	const struct labels_daemon_options *o = d->o;
	struct labels_options lo = o->lo;
	struct gerr err = {0};
	_cleanup_(node_freep) struct node *n = NULL;
	_cleanup_(label_set_freep) struct label_set *s = NULL;
	_cleanup_free_ char *text = NULL;
	struct labels_host host;
	struct node empty = {0};
	int r;

	if (d->nv && node_load(d->nv, o->host->root, &n, &err) < 0) {
		log_error("cannot read the GPUs", "error=\"%s\"", err.msg);
		if (o->fail_on_init_error)
			return PASS_FAILED;
	}
	labels_read_host(o->host->root, n ? n : &empty, o->machine_file, &host);
	if (host.vgpu_note[0] && !d->vgpu_noted) {
		log_warn("vGPU labels incomplete", "reason=\"%s\"", host.vgpu_note);
		d->vgpu_noted = true;
	}
	lo.now = time(NULL);
	r = labels_build(n ? n : &empty, &lo, &host, &s, &err);
	labels_host_clear(&host);
	if (r < 0) {
		log_error("cannot compute labels", "error=\"%s\"", err.msg);
		return PASS_REFUSED;
	}
	if (labels_format(s, &text) < 0)
		return PASS_FAILED;
	r = write_output(d, s, text);
	if (r < 0)
		return r == -EAGAIN ? PASS_RETRY : PASS_FAILED;
	log_debug("labels written", "to=%s labels=%zu",
		  d->nf && !d->fallback ? nodefeature_name(d->nf)
		  : o->out              ? "-"
					: o->output,
		  s->n);
	return PASS_OK;
}

/*
 * NVML for the labels. Without it GFD with --fail-on-init-error=false writes only what needs no GPU
 * (the timestamp); we say so, and try again at every relabelling so the labels appear once the driver does.
 */
static int open_nvml(struct labels_daemon *d)
{
	const struct labels_daemon_options *o = d->o;
	struct gerr err = {0};
	int r = nvml_open_host(o->host, &d->nv, &err);

	if (r >= 0)
		return r;
	if (o->fail_on_init_error || o->oneshot)
		log_error("cannot load NVML", "error=\"%s\"", err.msg);
	else
		log_warn("cannot load NVML: no GPU labels are written (only the timestamp); trying again at each "
			 "relabelling",
			 "error=\"%s\" sleep_interval_ms=%lld", err.msg,
			 o->sleep_ns < 0 ? -1LL : (long long)(o->sleep_ns / OPT_NSEC_PER_MSEC));
	d->nv = NULL;
	return r;
}

/* A pass, then the next one after the sleep interval; a pass that must end the daemon stops the loop. */
static long long on_tick(void *data)
{
	struct labels_daemon *d = data;
	long long sleep_ms;
	enum pass p;

	/* the object's first LIST says whether the API serves NodeFeatures: its answer starts the pass */
	if (d->nf && nodefeature_state(d->nf, NULL) == NODEFEATURE_WAITING)
		return -1;
	if (!d->nv && open_nvml(d) >= 0)
		log_info("NVML loaded, labelling the GPUs", NULL);
	p = label_once(d);
	if (p == PASS_REFUSED || (p == PASS_FAILED && d->o->fail_on_init_error)) {
		d->code = 1;
		loop_stop(d->loop, 0);
		return -1;
	}
	sleep_ms = d->o->sleep_ns < 0 ? -1 : d->o->sleep_ns / OPT_NSEC_PER_MSEC;
	if (p != PASS_RETRY) {
		d->retry_ms = 0;
		return sleep_ms;
	}
	d->retry_ms = d->retry_ms ? MIN(d->retry_ms * 2, RETRY_MAX_MS) : RETRY_MS;
	return sleep_ms < 0 ? d->retry_ms : MIN(d->retry_ms, sleep_ms);
}

/* SIGHUP: the verb builds the options again and applies them (labels_daemon_apply()), or nothing changes. */
static int on_reload(void *data, struct gerr *err)
{
	struct labels_daemon *d = data;

	log_info("Reading the config file again", "cause=\"%s\"", loop_reload_cause(d->loop));
	return d->reload(d->reload_data, err);
}

/*
 * The object's informer woke us: written again at once when it was deleted or edited behind our back,
 * or when the API starts serving NodeFeatures (NFD installed after us).
 */
static int on_object(void *data)
{
	struct labels_daemon *d = data;
	struct gerr why = {0};
	enum nodefeature_state s;

	if (!nodefeature_changed(d->nf))
		return 0;
	s = nodefeature_state(d->nf, &why);
	if (s == NODEFEATURE_FAILING)
		log_warn("The API server does not answer for the NodeFeature object", "name=%s error=\"%s\"",
			 nodefeature_name(d->nf), why.msg);
	else
		log_debug("NodeFeature object changed", "name=%s api=%s", nodefeature_name(d->nf),
			  nodefeature_state_name(s));
	if (s != NODEFEATURE_WAITING && s != NODEFEATURE_FAILING)
		loop_due(d->loop, 0);
	return 0;
}

static const struct loop_ops labels_loop_ops = {.reload = on_reload, .tick = on_tick};

/* --use-node-feature-api: the object's client; without an API server (not in a pod, no kubeconfig) the file. */
static int open_object(struct labels_daemon *d)
{
	struct nodefeature_options no = *d->o->nfd;
	struct gerr err = {0};
	int r;

	no.follow = !d->o->oneshot;
	r = nodefeature_open(&no, &d->nf, &err);
	if (r == -ENOENT) {
		log_info("No Kubernetes API server (not in a pod, no --kubeconfig): writing the feature file",
			 "path=%s", d->o->output);
		return 0;
	}
	if (r < 0)
		return log_error("cannot use the NodeFeature API", "error=\"%s\"", err.msg), r;
	log_info("Labels go to a NodeFeature object", "name=%s namespace=%s", nodefeature_name(d->nf), no.ns);
	if (d->loop && (r = loop_add_fd(d->loop, nodefeature_fd(d->nf), on_object, d)) < 0)
		return log_error("cannot start", "error=\"%s\"", strerror(-r)), r;
	return 0;
}

void labels_daemon_stop(struct labels_daemon *d)
{
	if (!d)
		return;
	nodefeature_close(d->nf);
	nvml_close(d->nv);
	loop_free(d->loop);
	free(d);
}

int labels_daemon_start(const struct labels_daemon_options *o, int (*reload)(void *data, struct gerr *err), void *data,
			struct labels_daemon **ret)
{
	_cleanup_(labels_daemon_stopp) struct labels_daemon *d = calloc(1, sizeof(*d));
	struct gerr err = {0};
	sigset_t set;
	int r;

	if (!d)
		return log_error("out of memory", NULL), -ENOMEM;
	*d = (struct labels_daemon){.o = o, .reload = reload, .reload_data = data};
	if (!o->oneshot) {
		/* SIGHUP: GFD reloads its config (the chart's config-manager sends it) */
		sig_daemon_set(&set);
		r = loop_new(&set, &labels_loop_ops, d, &d->loop, &err);
		if (r >= 0 && o->source && (r = loop_add_source(d->loop, o->source)) < 0)
			gerr_set(&err, r, "%s", strerror(-r));
		if (r < 0)
			return log_error("cannot start", "error=\"%s\"", err.msg), r;
	}
	if (o->nfd && !o->out && (r = open_object(d)) < 0)
		return r;
	r = open_nvml(d);
	if (r < 0 && o->fail_on_init_error)
		return r;
	*ret = TAKE_PTR(d);
	return 0;
}

void labels_daemon_apply(struct labels_daemon *d, const struct labels_daemon_options *o)
{
	d->o = o;
	if (d->loop)
		loop_due(d->loop, 0);
}

int labels_daemon_run(struct labels_daemon *d)
{
	if (d->o->oneshot)
		return label_once(d) == PASS_OK ? 0 : 1;
	/*
	 * The feature file stays when we stop (GFD removes it, cmd/gpu-feature-discovery/main.go): a
	 * rollout or a crash must not blank the node's labels until NFD's next pass; the next
	 * successful labelling replaces it (docs/reference/device-plugin.md §9.1).
	 */
	if (loop_run(d->loop) < 0)
		return 1;
	return d->code;
}
