/* SPDX-License-Identifier: Apache-2.0 */
/* `gpulet labels`' daemon: GFD's labelling loop on the one daemon loop (daemon.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "labels/daemon.h"
#include "nvml/nvml.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/opt.h"
#include "util/sig.h"

/* What a labelling pass ended with. */
enum pass { PASS_OK, PASS_FAILED, PASS_REFUSED };

struct labels_daemon {
	const struct labels_daemon_options *o;
	int (*reload)(void *data, struct gerr *err);
	void *reload_data;
	struct nvml *nv; /* NULL until it loads */
	struct loop *loop;
	int code;        /* the exit code once the loop stops */
	bool vgpu_noted; /* the vGPU note (a short PCI config space) was logged: once per process */
};

static int write_output(const struct labels_daemon_options *o, const char *text)
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
	if (labels_format(s, &text) < 0 || write_output(o, text) < 0)
		return PASS_FAILED;
	log_debug("labels written", "path=%s labels=%zu", o->out ? "-" : o->output, s->n);
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
	enum pass p;

	if (!d->nv && open_nvml(d) >= 0)
		log_info("NVML loaded, labelling the GPUs", NULL);
	p = label_once(d);
	if (p == PASS_REFUSED || (p == PASS_FAILED && d->o->fail_on_init_error)) {
		d->code = 1;
		loop_stop(d->loop, 0);
		return -1;
	}
	return d->o->sleep_ns < 0 ? -1 : d->o->sleep_ns / OPT_NSEC_PER_MSEC;
}

/* SIGHUP: the verb builds the options again and applies them (labels_daemon_apply()), or nothing changes. */
static int on_reload(void *data, struct gerr *err)
{
	struct labels_daemon *d = data;

	log_info("SIGHUP: reading the config file again", NULL);
	return d->reload(d->reload_data, err);
}

static const struct loop_ops labels_loop_ops = {.reload = on_reload, .tick = on_tick};

void labels_daemon_stop(struct labels_daemon *d)
{
	if (!d)
		return;
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
		if (r < 0)
			return log_error("cannot start", "error=\"%s\"", err.msg), r;
	}
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
