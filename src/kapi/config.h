/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the API server is and how we prove who we are, from a kubeconfig file or from the pod's
 * service account (docs/reference/kube-api.md §1). Reads files, sends nothing; kapi_open() uses it,
 * tests and the fuzz target call it directly.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kapi/kapi.h"
#include "util/err.h"

#define KAPI_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kapi_config {
	char *server; /* "https://host:port[/prefix]", no trailing '/' */
	char *ns;     /* the default namespace */
	char *origin; /* "kubeconfig FILE, context C" or "in-cluster (DIR)", for messages */
	/* the server's CA: a file (read by TLS at each connection, so a rotated ca.crt is seen) or PEM
	 * bytes; neither: the system's CAs (a kubeconfig without one, as client-go) */
	char *ca_file;
	uint8_t *ca_data;
	size_t ca_len;
	bool insecure; /* insecure-skip-tls-verify: true */
	/* a client certificate: files or PEM bytes (both, or neither) */
	char *cert_file, *key_file;
	uint8_t *cert_data, *key_data;
	size_t cert_len, key_len;
	/* a bearer token: the value, and the file it is re-read from (either may be NULL) */
	char *token;
	char *token_file;
	char warning[256]; /* empty, or what the caller must log once */
};

/*
 * The configuration kapi_open() uses: kubeconfig (a path, which the verb's --kubeconfig row takes from
 * $KUBECONFIG too) with context (NULL: its current-context), else the service account under sa_dir
 * (NULL: KAPI_SA_DIR) when env says we are in a pod (env NULL: not). -ENOENT when none applies.
 */
int kapi_config_load(const char *kubeconfig, const char *context, const char *sa_dir, const struct kapi_env *env,
		     struct kapi_config **ret, struct gerr *err);

/* A kubeconfig's text; path names it and is where relative file names are resolved from. */
int kapi_config_parse(const char *text, size_t len, const char *path, const char *context, struct kapi_config **ret,
		      struct gerr *err);

/* The pod's service account: env's host and port, sa_dir/{token,ca.crt,namespace}, env's POD_NAMESPACE. */
int kapi_config_in_cluster(const char *sa_dir, const struct kapi_env *env, struct kapi_config **ret, struct gerr *err);

void kapi_config_free(struct kapi_config *c);
DEFINE_CLEANUP_FUNC(struct kapi_config, kapi_config_free)

/*
 * Read a bearer token file: its content without surrounding white space (client-go trims it too).
 * -ENODATA for an empty one.
 */
int kapi_read_token(const char *path, char **ret, struct gerr *err);
