/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-node configs, as NVIDIA's config-manager has them (docs/reference/config-manager.md): the node
 * label nvidia.com/device-plugin.config names one of the v1 configs in a directory (the mounted
 * ConfigMap); without it DEFAULT_CONFIG, else the fallback strategies (named, single, empty) choose.
 *
 *   choose.c   the rule: the configs a directory holds, the label's choice (nodeconfig_choose())
 *   follow.c   the label followed live on the node (an informer of kapi/), the file each reload of a
 *              daemon reads (a loop_argv chooser), an Event on the Node when a config is refused
 *   manager.c  what `config-manager` does with a choice: the CONFIG_FILE_DST symlink, the signal to
 *              the process named PROCESS_TO_SIGNAL
 *
 * gpulet's plugin, mps-control-daemon and labels follow the label themselves (CONFIG_FILE_SRCDIR
 * set): the choice goes through their one reload path (util/loop.h), so a config that does not load
 * keeps the running one. `gpulet config-manager` is the GPU Operator's init container and sidecar.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kapi/kapi.h"
#include "util/err.h"
#include "util/loop.h"
#include "util/macro.h"

#define NODECONFIG_LABEL "nvidia.com/device-plugin.config" /* upstream's DefaultConfigLabel */
#define NODECONFIG_NAMED "default" /* the config the named strategy looks for (NamedConfigFallback) */

/* ---- the rule (choose.c) ------------------------------------------------------------------- */

/* upstream's FallbackStrategies */
enum nodeconfig_fallback { NODECONFIG_FALLBACK_NAMED, NODECONFIG_FALLBACK_SINGLE, NODECONFIG_FALLBACK_EMPTY };
#define NODECONFIG_MAX_FALLBACKS 8

struct nodeconfig_fallbacks {
	size_t n;
	enum nodeconfig_fallback v[NODECONFIG_MAX_FALLBACKS]; /* tried in this order */
};

/*
 * FALLBACK_STRATEGIES: words separated by commas, spaces around them dropped, "" for none (as
 * urfave/cli's string slice reads it). An unknown word or an empty item is -EINVAL with err naming
 * it and the valid words (upstream refuses it only once it is tried).
 */
int nodeconfig_fallbacks_parse(const char *text, struct nodeconfig_fallbacks *ret, struct gerr *err);

/* The configs of a directory: each name once, sorted. */
#define NODECONFIG_MAX_NAMES 256
struct nodeconfig_names {
	size_t n;
	char *v[NODECONFIG_MAX_NAMES];
};
void nodeconfig_names_clear(struct nodeconfig_names *n);

/*
 * The entries of dir that are configs: files (through symlinks: a ConfigMap volume's keys are links
 * into its ..data dir), not dirs, not named "..*" (the volume's own entries). -errno with err when
 * dir cannot be read or holds more than NODECONFIG_MAX_NAMES.
 */
int nodeconfig_list(const char *dir, struct nodeconfig_names *ret, struct gerr *err);

/* What nodeconfig_choose() decided, and why (log lines, messages). */
enum nodeconfig_why {
	NODECONFIG_BY_LABEL,   /* the label names it */
	NODECONFIG_BY_DEFAULT, /* no label: DEFAULT_CONFIG */
	NODECONFIG_BY_NAMED,   /* no label, no default: the config called "default" */
	NODECONFIG_BY_SINGLE,  /* ...: the only config */
	NODECONFIG_BY_EMPTY,   /* ...: the empty config (no file) */
};
const char *nodeconfig_why_name(enum nodeconfig_why why);

/*
 * upstream's updateConfigName(): the config for label (NULL or "" when the node has none) among
 * names; *ret_name points into names or is "" for the empty config. -ENOENT when names is empty, the
 * label or default_config names no config, or no fallback gives one; err says which and what is there.
 */
int nodeconfig_choose(const struct nodeconfig_names *names, const char *label, const char *default_config,
		      const struct nodeconfig_fallbacks *fb, const char **ret_name, enum nodeconfig_why *ret_why,
		      struct gerr *err);

/* ---- the options every follower shares ------------------------------------------------------ */

/* The values of NODECONFIG_OPTS's rows (borrowed from argv and env: OPT_ARGV). */
struct nodeconfig_options {
	const char *srcdir;         /* CONFIG_FILE_SRCDIR: NULL or "": per-node configs off */
	const char *label;          /* NODE_LABEL */
	const char *default_config; /* DEFAULT_CONFIG */
	const char *fallbacks;      /* FALLBACK_STRATEGIES */
};

/*
 * The rows (util/optspec.h) of upstream's config-manager flags that choose a config, at off_ (a
 * struct nodeconfig_options in the verb's options); the plugin, mps-control-daemon and labels take
 * them, and per-node configs are on when --config-file-srcdir is given.
 */
#define NODECONFIG_ROW(off_, name_, env_, arg_, def_, field_, help_)                              \
	{                                                                                         \
		.name = (name_), .kind = OPT_ARGV, .arg = (arg_), .env = {(env_)}, .def = (def_), \
		.off = (off_) + offsetof(struct nodeconfig_options, field_), .help = (help_)      \
	}
#define NODECONFIG_OPTS(off_)                                                                                 \
	NODECONFIG_ROW(off_, "config-file-srcdir", "CONFIG_FILE_SRCDIR", "DIR", NULL, srcdir,                 \
		       "per-node configs: the dir of named v1 configs (a mounted ConfigMap); the node label " \
		       "--node-label chooses one, live (needs --node-name and access to the API server)"),    \
	    NODECONFIG_ROW(off_, "node-label", "NODE_LABEL", "KEY", NODECONFIG_LABEL, label,                  \
			   "per-node configs: the node label naming the config"),                             \
	    NODECONFIG_ROW(off_, "default-config", "DEFAULT_CONFIG", "NAME", NULL, default_config,            \
			   "per-node configs: the config of a node without the label"),                       \
	    NODECONFIG_ROW(off_, "fallback-strategies", "FALLBACK_STRATEGIES", "S[,S]", NULL, fallbacks,      \
			   "per-node configs: without the label and --default-config, tried in order: named " \
			   "(the config 'default'), single (the only config), empty (no config file)")

/* ---- following the label (follow.c) -------------------------------------------------------- */

struct nodeconfig_follow_options {
	struct kapi *kapi;     /* borrowed: the process's one client */
	const char *node_name; /* NODE_NAME */
	const char *component; /* who says it in logs and Events: "gpulet-plugin" */
	const char *srcdir;    /* absolute */
	const char *label;     /* the label key */
	const char *default_config;
	struct nodeconfig_fallbacks fallbacks;
	unsigned sync_timeout_s; /* the first LIST of the node, at most this long; 0: 60 */
};

struct nodeconfig;

/*
 * Watch the node (one informer, field selector metadata.name=<node>) and wait until it is listed
 * (the label must be known before the first config is chosen), at most sync_timeout_s: -ETIMEDOUT
 * with the informer's last error (a 403 names the RBAC rule), -EINTR when a stop signal is pending.
 * The strings are copied.
 */
int nodeconfig_start(const struct nodeconfig_follow_options *o, struct nodeconfig **ret, struct gerr *err);
/* Stops the informer. NULL is fine. */
void nodeconfig_stop(struct nodeconfig *nc);
DEFINE_CLEANUP_FUNC(struct nodeconfig, nodeconfig_stop)

/* Readable when the node may have changed: then nodeconfig_changed(). */
int nodeconfig_fd(const struct nodeconfig *nc);
/* The node's changes taken: true when the label differs from the one the last choice read. */
bool nodeconfig_changed(struct nodeconfig *nc);
/* The label's value now (NULL when the node has none). */
const char *nodeconfig_label(const struct nodeconfig *nc);
/* The configs' dir, absolute. */
const char *nodeconfig_srcdir(const struct nodeconfig *nc);

/*
 * The config the label asks for now, by nodeconfig_choose() over the directory as it is now; the
 * label read is the one nodeconfig_changed() compares with from then on. *ret_name: the config's
 * name ("" for the empty config), owned; *ret_why may be NULL.
 */
int nodeconfig_current(struct nodeconfig *nc, char **ret_name, enum nodeconfig_why *ret_why, struct gerr *err);

/*
 * For loop_argv_set_file() (data: the nodeconfig): the path of the config the label asks for
 * ("" for the empty config). Once after nodeconfig_fall_back() the label is passed over.
 */
int nodeconfig_file(void *data, char **ret_path, struct gerr *err);

/*
 * The config the label names could not be used at start (why: its error), when there is no running
 * config to keep: logged and said in an Event, and the next nodeconfig_file() chooses as for a node
 * without the label. false when the label is not what failed (nothing to fall back from).
 */
bool nodeconfig_fall_back(struct nodeconfig *nc, const struct gerr *why);

/* A Warning Event on the node (reason, message), logged when it cannot be sent. */
void nodeconfig_event(struct nodeconfig *nc, const char *reason, const char *message);

/*
 * The daemon's side: a loop source (util/loop.h) that, when the label changed, reloads the daemon
 * through its one reload path (loop_reload()); a refused config keeps the running one, said in the
 * log and in a Warning Event on the node.
 */
struct loop_source nodeconfig_source(struct nodeconfig *nc);

/* ---- what config-manager does (manager.c) ---------------------------------------------------- */

/*
 * upstream's updateSymlink(): dst becomes a symlink to src ("/dev/null" for the empty config) unless
 * both resolve to the same file already. Atomic (a new link renamed over dst). 1 when changed, 0
 * when it was so, -errno with err.
 */
int nodeconfig_link(const char *dst, const char *src, struct gerr *err);

/*
 * The process to signal, upstream's findPidToSignal() made careful (docs/reference/config-manager.md
 * §4): the first by pid under proc ("/proc") whose command line's first word is name, or has name's
 * base name, and whose comm or executable also has that base name; never pid 1 nor self. -ESRCH
 * with err when none.
 */
int nodeconfig_find_process(const char *proc, const char *name, pid_t self, pid_t *ret, struct gerr *err);

/*
 * Signal the process nodeconfig_find_process() finds, through a pidfd opened before its identity is
 * checked (a pid reused meanwhile is not signalled). The pid signalled in *ret_pid.
 */
int nodeconfig_signal(const char *proc, const char *name, int sig, pid_t *ret_pid, struct gerr *err);
