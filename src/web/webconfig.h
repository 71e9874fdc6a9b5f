/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dcgm-exporter's --web-config-file: the Prometheus exporter-toolkit web configuration (YAML) with
 * TLS, client certificates, basic auth users and extra response headers
 * (docs/reference/dcgm-exporter.md "Web configuration"). Parsing only: no TLS library, no crypt;
 * the HTTP server (http.c) turns the result into libmicrohttpd/GnuTLS options (webtls.c) and the
 * password checks (webauth.c). Every key or value gpulet cannot honour exactly is an error.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

#define WEB_CONFIG_MAX_BYTES (1u << 20)
#define WEB_MAX_USERS        1024
#define WEB_MAX_SANS         256
#define WEB_MAX_CURVES       4
#define WEB_MAX_HEADERS      5 /* the headers upstream allows at all */
/* bcrypt cost bounds: 4 is bcrypt's floor; above 15 one check takes seconds (webauth.c) */
#define WEB_BCRYPT_MIN_COST 4
#define WEB_BCRYPT_MAX_COST 15
#define WEB_BCRYPT_LEN      60 /* "$2y$10$" + 22 salt + 31 hash characters */
#define WEB_BCRYPT_HASH_LEN 31

enum web_client_auth {
	WEB_CLIENT_NONE,               /* NoClientCert (or empty) */
	WEB_CLIENT_REQUEST,            /* RequestClientCert: asked for, never required nor verified */
	WEB_CLIENT_REQUIRE_ANY,        /* RequireAnyClientCert (old name RequireClientCert): any cert */
	WEB_CLIENT_VERIFY_IF_GIVEN,    /* VerifyClientCertIfGiven */
	WEB_CLIENT_REQUIRE_AND_VERIFY, /* RequireAndVerifyClientCert */
};

enum web_tls_version { WEB_TLS10 = 1, WEB_TLS11, WEB_TLS12, WEB_TLS13 };
enum web_curve { WEB_CURVE_P256, WEB_CURVE_P384, WEB_CURVE_P521, WEB_CURVE_X25519 };

struct web_user {
	char *name;
	char *hash; /* bcrypt, WEB_BCRYPT_LEN characters, checked by webconfig_check_bcrypt() */
};

struct web_header {
	const char *name; /* one of upstream's five (static) */
	char *value;
};

struct web_config {
	char *path; /* the file, for messages */
	/* tls_server_config: TLS is on when any of cert/key (inline or file), client CA or
	 * client_auth_type is set, as upstream's TLSConfig.IsEnabled() */
	bool tls;
	char *cert_file, *key_file, *client_ca_file; /* relative ones joined to the file's directory */
	char *cert, *key, *client_ca;                /* inline PEM */
	enum web_client_auth client_auth;
	enum web_tls_version min_version, max_version; /* default TLS12..TLS13 */
	enum web_curve curves[WEB_MAX_CURVES];
	size_t n_curves; /* 0: the default groups */
	bool sans_set;   /* client_allowed_sans given (even empty: then no certificate passes) */
	char **sans;
	size_t n_sans;
	struct web_header headers[WEB_MAX_HEADERS];
	size_t n_headers;
	struct web_user *users;
	size_t n_users;
};

/*
 * Parse text[0..len) (path names it in messages and anchors relative file names). Returns 0 or
 * -errno with err "PATH:LINE:COL: key: what is wrong; what to do". *ret written only on success.
 */
int webconfig_parse(const char *text, size_t len, const char *path, struct web_config **ret, struct gerr *err);
/* Read the file (at most WEB_CONFIG_MAX_BYTES) and parse it. */
int webconfig_load(const char *path, struct web_config **ret, struct gerr *err);
void webconfig_free(struct web_config *c);
DEFINE_CLEANUP_FUNC(struct web_config, webconfig_free)

/* 0 if hash is a bcrypt hash gpulet checks exactly as upstream's Go bcrypt does; else -EINVAL. */
int webconfig_check_bcrypt(const char *hash, unsigned *ret_cost);

/*
 * The credentials of an Authorization header value ("Basic base64(user:password)", scheme case
 * insensitive, standard base64 with padding, as Go's Request.BasicAuth). 0 with *ret_user and
 * *ret_pass (one allocation: free(*ret_user) frees both) and *ret_pass_len; -EINVAL when it is no
 * valid Basic credential; -ENOMEM.
 */
int web_basic_credentials(const char *header, char **ret_user, char **ret_pass, size_t *ret_pass_len);
