/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parsers for the places a node keeps kubelet's command line (docs/reference/kubelet-root-dir.md):
 * /proc/<pid>/cmdline, KEY=VALUE environment files (kubeadm-flags.env, /etc/default/kubelet),
 * systemd units and drop-ins (Environment=, EnvironmentFile=, ExecStart=), the args files of
 * microk8s, and the kubelet-arg list of k3s/rke2 config.yaml. They only parse text: reading the
 * files below --root is the caller's job. Every count is bounded; bad text is -EINVAL with words.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

#define KARGV_MAX 4096 /* words of one command line or list */

/* A list of owned strings: the words of a command line, KEY=VALUE assignments, file names. */
struct kargv {
	char **v;
	size_t n;
};
void kargv_done(struct kargv *a);
/* Append a copy of the first len bytes of s. -ENOMEM, -E2BIG past KARGV_MAX. */
int kargv_add(struct kargv *a, const char *s, size_t len);

/* /proc/<pid>/cmdline: words separated by NUL bytes (the last NUL is optional). */
int kargv_from_nul(const char *buf, size_t len, struct kargv *ret);

/*
 * Append the words of text to a: blanks and newlines separate, '...' and "..." quote, a backslash
 * escapes the next character (inside "..." too). With comments, a word starting with '#' runs to
 * the end of the line (shell; microk8s args files). An unterminated quote is -EINVAL.
 */
int kargv_split(struct kargv *a, const char *text, bool comments, struct gerr *err);

/* Value of the last --name=V or "--name V" (later flags win, as in kubelet's pflag); NULL if absent. */
const char *kargv_flag(const struct kargv *a, const char *name);

/*
 * Every assignment of a systemd EnvironmentFile= / shell env file, in order, as "KEY=VALUE" with
 * quotes removed: blank lines and lines starting with '#' or ';' are skipped, "export " is allowed.
 * A line without '=' or with an unterminated quote is -EINVAL (line number in err).
 */
int kenv_parse(struct kargv *a, const char *name, const char *text, struct gerr *err);
/* Value of KEY in a list of "KEY=VALUE" (the last assignment wins); NULL if absent. */
const char *kenv_get(const struct kargv *env, const char *key);

/* What kubelet's systemd unit and its drop-ins say, fed in the order systemd applies them. */
struct kunit {
	struct kargv env;       /* Environment= assignments, "KEY=VALUE" */
	struct kargv env_files; /* EnvironmentFile= paths; a leading '-' (optional file) is kept */
	char *exec_start;       /* the ExecStart= in force (an empty assignment resets it) */
};
/* Add one unit file or drop-in: only [Service] is read; lines may continue with a backslash. */
int kunit_feed(struct kunit *u, const char *name, const char *text, struct gerr *err);
void kunit_done(struct kunit *u);
/*
 * The command ExecStart= runs: its words, with systemd's prefixes (-, @, +, !, :) dropped, a word
 * "$VAR" replaced by the blank-separated words of VAR and "${VAR}" / "$VAR" inside a word by its
 * value; env is the environment ("KEY=VALUE", the last assignment wins; unset is empty).
 */
int kunit_exec_argv(const char *exec_start, const struct kargv *env, struct kargv *ret, struct gerr *err);

/*
 * text with $NAME and ${NAME} replaced from vars ("NAME=VALUE"); unknown names are left as they are
 * (microk8s: $SNAP_COMMON, $SNAP_DATA). *ret is malloc'd.
 */
int kexpand(const char *text, const struct kargv *vars, char **ret);

/*
 * The kubelet-arg list of one k3s / rke2 config file (YAML read with parse/yaml.h, one document, a
 * map of flag names; k3s reads it with go-yaml v2 as parse/yaml does), applied to list the
 * way k3s merges config.yaml and config.yaml.d/ *.yaml: "kubelet-arg" replaces the list,
 * "kubelet-arg+" appends to it; a string is a list of one. Items are "name=value" with or without
 * leading dashes. Not a map, or bad YAML: -EINVAL with words.
 */
int k3s_config_kubelet_args(struct kargv *list, const char *name, const char *text, size_t len, struct gerr *err);
/* Value of the last item "name=V" / "--name=V" of a kubelet-arg list; NULL if absent. */
const char *k3s_kubelet_arg(const struct kargv *list, const char *name);
