/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exporter-toolkit's ConfigToTLSConfig (web/tls_config.go) on GnuTLS, which libmicrohttpd uses.
 * Go checks client certificates in the handshake; libmicrohttpd only asks for them (when it has a
 * trust list), so the verdict is taken on each request: a refused client gets its connection closed
 * without an answer. docs/reference/dcgm-exporter.md "Web configuration" lists the differences.
 */
#include <assert.h>
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web/webtls.h"
#include "util/fileio.h"
#include "util/macro.h"

#define PEM_MAX (1u << 20)

static const char *const version_prio[] = {
    [WEB_TLS10] = "+VERS-TLS1.0",
    [WEB_TLS11] = "+VERS-TLS1.1",
    [WEB_TLS12] = "+VERS-TLS1.2",
    [WEB_TLS13] = "+VERS-TLS1.3",
};
static const char *const curve_prio[] = {
    [WEB_CURVE_P256] = "+GROUP-SECP256R1",
    [WEB_CURVE_P384] = "+GROUP-SECP384R1",
    [WEB_CURVE_P521] = "+GROUP-SECP521R1",
    [WEB_CURVE_X25519] = "+GROUP-X25519",
};
/* Go's groups without curve_preferences, in its order (less X25519MLKEM768, which GnuTLS 3.7 lacks) */
static const enum web_curve default_curves[] = {WEB_CURVE_X25519, WEB_CURVE_P256, WEB_CURVE_P384, WEB_CURVE_P521};

static int priorities(const struct web_config *c, char **ret, struct gerr *err)
{
	char buf[512] = "NORMAL:%SERVER_PRECEDENCE:-VERS-ALL:-GROUP-ALL";
	for (int v = (int)c->min_version; v <= (int)c->max_version; v++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ":%s", version_prio[v]);
	const enum web_curve *cv = c->n_curves ? c->curves : default_curves;
	size_t n = c->n_curves ? c->n_curves : ELEMENTSOF(default_curves);
	for (size_t i = 0; i < n; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ":%s", curve_prio[cv[i]]);
	gnutls_priority_t p;
	const char *at = NULL;
	int r = gnutls_priority_init(&p, buf, &at);
	if (r < 0)
		return gerr_set(err, EINVAL, "%s: tls_server_config: GnuTLS refuses the TLS settings (%s at \"%s\")",
				c->path, gnutls_strerror(r), at ? at : "?");
	gnutls_priority_deinit(p);
	if (!(*ret = strdup(buf)))
		return gerr_set(err, ENOMEM, "out of memory");
	return 0;
}

/* the inline PEM, or the file's text */
static int pem(const struct web_config *c, const char *inl, const char *file, const char *key, char **ret,
	       struct gerr *err)
{
	size_t len;
	if (!inl && !file) {
		*ret = NULL;
		return 0;
	}
	if (inl)
		return (*ret = strdup(inl)) ? 0 : gerr_set(err, ENOMEM, "out of memory");
	int r = read_file(file, PEM_MAX, ret, &len, err);
	if (r < 0)
		return gerr_prefix(err, "%s: tls_server_config.%s: ", c->path, key);
	return 0;
}

static gnutls_datum_t datum(const char *s)
{
	return (gnutls_datum_t){.data = (unsigned char *)s, .size = (unsigned)strlen(s)};
}

/* what libmicrohttpd will do with them, done once here to say what is wrong */
static int check_credentials(const struct web_tls *t, struct gerr *err)
{
	const struct web_config *c = t->c;
	gnutls_certificate_credentials_t cred;
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	gnutls_datum_t cd = datum(t->cert), kd = datum(t->key);
	int r = gnutls_certificate_set_x509_key_mem2(cred, &cd, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (r < 0)
		r = gerr_set(err, EINVAL,
			     "%s: tls_server_config: cannot use %s with %s: %s; give a PEM certificate and its "
			     "unencrypted private key",
			     c->path, c->cert_file ? c->cert_file : "cert", c->key_file ? c->key_file : "key",
			     gnutls_strerror(r));
	else if (t->client_ca) {
		gnutls_datum_t ca = datum(t->client_ca);
		r = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
		if (r <= 0)
			r = gerr_set(err, EINVAL,
				     "%s: tls_server_config: no PEM certificate in %s%s%s; give the CA "
				     "that signs the client certificates",
				     c->path, c->client_ca_file ? c->client_ca_file : "client_ca", r < 0 ? ": " : "",
				     r < 0 ? gnutls_strerror(r) : "");
	}
	gnutls_certificate_free_credentials(cred);
	return r < 0 ? r : 0;
}

int web_tls_load(const struct web_config *c, struct web_tls **ret, struct gerr *err)
{
	struct web_tls *t = calloc(1, sizeof(*t));
	if (!t)
		return gerr_set(err, ENOMEM, "out of memory");
	t->c = c;
	int r = pem(c, c->cert, c->cert_file, "cert_file", &t->cert, err);
	if (r >= 0)
		r = pem(c, c->key, c->key_file, "key_file", &t->key, err);
	if (r >= 0)
		r = pem(c, c->client_ca, c->client_ca_file, "client_ca_file", &t->client_ca, err);
	if (r >= 0) {
		/* web_config_load() refuses a tls_server_config without both certificate and key */
		assert(t->cert && t->key);
		r = check_credentials(t, err);
	}
	if (r >= 0)
		r = priorities(c, &t->priorities, err);
	if (r < 0) {
		web_tls_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

/* Go's x509 VerifyOptions for a client: chain to the client CA, extended key usage client auth */
static bool verified(gnutls_session_t s)
{
	gnutls_typed_vdata_st d = {.type = GNUTLS_DT_KEY_PURPOSE_OID, .data = (void *)GNUTLS_KP_TLS_WWW_CLIENT};
	unsigned status = 1;
	return gnutls_certificate_verify_peers(s, &d, 1, &status) == 0 && status == 0;
}

/* a SAN as Go's VerifyPeerCertificate writes it: DNS, email, IP (net.IP.String()), URI */
static bool san_text(int type, const char *buf, size_t size, char *out, size_t outsz)
{
	if (type == GNUTLS_SAN_DNSNAME || type == GNUTLS_SAN_RFC822NAME || type == GNUTLS_SAN_URI) {
		snprintf(out, outsz, "%.*s", (int)size, buf);
		return strlen(out) == size;
	}
	if (type != GNUTLS_SAN_IPADDRESS)
		return false;
	static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (size == 16 && !memcmp(buf, v4mapped, 12))
		buf += 12, size = 4;
	return (size == 4 || size == 16) && inet_ntop(size == 4 ? AF_INET : AF_INET6, buf, out, (socklen_t)outsz);
}

static bool san_allowed(const struct web_config *c, const gnutls_datum_t *der)
{
	gnutls_x509_crt_t crt;
	bool ok = false;
	if (gnutls_x509_crt_init(&crt) < 0)
		return false;
	if (gnutls_x509_crt_import(crt, der, GNUTLS_X509_FMT_DER) == 0)
		for (unsigned seq = 0; !ok; seq++) {
			char buf[1024], text[1100];
			size_t size = sizeof(buf);
			int type = gnutls_x509_crt_get_subject_alt_name(crt, seq, buf, &size, NULL);
			if (type == GNUTLS_E_SHORT_MEMORY_BUFFER)
				continue;
			if (type < 0)
				break;
			if (!san_text(type, buf, size, text, sizeof(text)))
				continue;
			for (size_t i = 0; i < c->n_sans && !ok; i++)
				ok = streq(c->sans[i], text);
		}
	gnutls_x509_crt_deinit(crt);
	return ok;
}

int web_tls_check_peer(const struct web_tls *t, void *session)
{
	gnutls_session_t s = session;
	unsigned n = 0;
	const gnutls_datum_t *certs = gnutls_certificate_get_peers(s, &n);
	bool have = certs && n > 0;
	switch (t->c->client_auth) {
	case WEB_CLIENT_NONE:
	case WEB_CLIENT_REQUEST:
		break;
	case WEB_CLIENT_REQUIRE_ANY:
		if (!have)
			return -EACCES;
		break;
	case WEB_CLIENT_VERIFY_IF_GIVEN:
		if (have && !verified(s))
			return -EACCES;
		break;
	case WEB_CLIENT_REQUIRE_AND_VERIFY:
		if (!have || !verified(s))
			return -EACCES;
		break;
	}
	/* upstream checks the SANs of any certificate given; gpulet also refuses a request without one */
	if (t->c->sans_set && (!have || !san_allowed(t->c, &certs[0])))
		return -EACCES;
	return 0;
}

void web_tls_free(struct web_tls *t)
{
	if (!t)
		return;
	if (t->key)
		explicit_bzero(t->key, strlen(t->key));
	free(t->cert);
	free(t->key);
	free(t->client_ca);
	free(t->priorities);
	free(t);
}
