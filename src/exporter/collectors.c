/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The collectors file reader (collectors.h). Records follow RFC 4180 as Go's encoding/csv reads
 * them, which is what dcgm-exporter uses: a field may be quoted ("a, b" with "" for a quote, line
 * breaks allowed inside), a quote inside an unquoted field is an error, a line whose first byte is
 * '#' is a comment, an empty line is skipped. Each field is then trimmed of spaces and tabs.
 */
#include <errno.h>
#include <string.h>

#include "exporter/collectors.h"
#include "exporter/exporter.h"
#include "util/fileio.h"

int exp_dcgm_field_known(const char *name)
{
	size_t n = strlen(name);
	for (const char *p = exp_dcgm_field_names; n && (p = strstr(p, name)); p += n)
		if ((p == exp_dcgm_field_names || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

/* The text being read: position, line, and the field being collected. */
struct csv {
	const char *s, *end;
	unsigned line;
	char buf[EXP_COLLECTORS_MAX_HELP + 1];
	size_t len;
};

static int put(struct csv *c, char ch, const char *file, struct gerr *err)
{
	if (c->len >= EXP_COLLECTORS_MAX_HELP)
		return gerr_set(err, EINVAL, "%s:%u: a field is longer than %u bytes; shorten it", file, c->line,
				EXP_COLLECTORS_MAX_HELP);
	c->buf[c->len++] = ch;
	return 0;
}

static char *trimmed(const char *s, size_t len)
{
	while (len && (*s == ' ' || *s == '\t'))
		s++, len--;
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
		len--;
	return strndup(s, len);
}

/* A quoted field, from after its opening quote to the separator or line end after the closing one. */
static int quoted(struct csv *c, const char *file, struct gerr *err)
{
	unsigned start = c->line;
	for (;;) {
		if (c->s == c->end)
			return gerr_set(err, EINVAL, "%s:%u: a quoted field is not closed; add the closing '\"'", file,
					start);
		char ch = *c->s++;
		if (ch == '"') {
			if (c->s < c->end && *c->s == '"') {
				c->s++;
			} else if (c->s == c->end || *c->s == ',' || *c->s == '\n' ||
				   (*c->s == '\r' && c->s + 1 < c->end && c->s[1] == '\n')) {
				return 0;
			} else {
				return gerr_set(
				    err, EINVAL,
				    "%s:%u: text after a closing '\"'; write a quote inside a quoted field as "
				    "\"\"",
				    file, c->line);
			}
		} else if (ch == '\n') {
			c->line++;
		}
		int r = put(c, ch, file, err);
		if (r < 0)
			return r;
	}
}

/* One field: fills c->buf; *last when the record ends after it. */
static int field(struct csv *c, bool *last, const char *file, struct gerr *err)
{
	c->len = 0;
	if (c->s < c->end && *c->s == '"') {
		c->s++;
		int r = quoted(c, file, err);
		if (r < 0)
			return r;
	} else {
		while (c->s < c->end && *c->s != ',' && *c->s != '\n') {
			if (*c->s == '"')
				return gerr_set(
				    err, EINVAL,
				    "%s:%u: a '\"' inside an unquoted field; quote the whole field (\"...\") "
				    "and write the quote as \"\"",
				    file, c->line);
			int r = put(c, *c->s++, file, err);
			if (r < 0)
				return r;
		}
	}
	*last = c->s == c->end || *c->s == '\n' || *c->s == '\r';
	if (c->s < c->end && *c->s == '\r')
		c->s++;
	if (c->s < c->end)
		c->s++; /* the ',' or '\n' */
	return 0;
}

static const char *const prom_types[] = {"gauge", "counter", "histogram", "summary", "label"};

/* Name, type and help of one record -> a counter; the checks dcgm-exporter makes, with words. */
static int classify(struct exp_counter *k, const char *file, struct gerr *err)
{
	bool type_ok = false;
	for (size_t i = 0; i < ELEMENTSOF(prom_types); i++)
		type_ok |= streq(k->type, prom_types[i]);
	if (strlen(k->name) > EXP_COLLECTORS_MAX_NAME || !*k->name)
		return gerr_set(err, EINVAL,
				"%s:%u: the field name is empty or too long; the first column is a DCGM "
				"field such as DCGM_FI_DEV_GPU_TEMP",
				file, k->line);
	int m = exp_metric_by_name(k->name);
	if (m >= 0) {
		k->kind = EXP_COUNTER_METRIC;
		k->metric = m;
	} else if (streq(k->name, "DCGM_FI_DEV_XID_ERRORS")) {
		k->kind = EXP_COUNTER_XID;
	} else if (streq(k->name, "DCGM_EXP_XID_ERRORS_COUNT")) {
		k->kind = EXP_COUNTER_XID_COUNT;
	} else if (streq(k->name, "DCGM_EXP_CLOCK_EVENTS_COUNT")) {
		k->kind = EXP_COUNTER_CLOCK_COUNT;
	} else if (streq(k->name, "DCGM_FI_DRIVER_VERSION")) {
		k->kind = EXP_COUNTER_DRIVER;
	} else if (streq(k->name, "DCGM_EXP_P2P_STATUS")) {
		k->kind = EXP_COUNTER_P2P_STATUS;
	} else if (streq(k->name, "DCGM_EXP_GPU_HEALTH_STATUS")) {
		k->kind = EXP_COUNTER_GPU_HEALTH;
	} else if (exp_dcgm_field_known(k->name)) {
		k->kind = EXP_COUNTER_UNAVAILABLE;
	} else {
		return gerr_set(err, EINVAL,
				"%s:%u: unknown field '%s': not a DCGM field name; check the spelling against "
				"dcgm-exporter's etc/default-counters.csv (docs/reference/dcgm-exporter.md lists the "
				"fields gpulet serves)",
				file, k->line, k->name);
	}
	if (!type_ok)
		return gerr_set(err, EINVAL,
				"%s:%u: unknown Prometheus type '%s' for %s; use gauge, counter, histogram, summary or "
				"label",
				file, k->line, k->type, k->name);
	return 0;
}

/* Read one record's 3 fields into k; ENODATA at a comment or empty line. */
static int record(struct csv *c, struct exp_counter *k, const char *file, struct gerr *err)
{
	char **out[3] = {&k->name, &k->type, &k->help};
	unsigned n = 0;
	bool last = false;

	k->line = c->line;
	if (*c->s == '#' || *c->s == '\n' || (*c->s == '\r' && c->s + 1 < c->end && c->s[1] == '\n')) {
		const char *nl = memchr(c->s, '\n', (size_t)(c->end - c->s));
		c->s = nl ? nl + 1 : c->end;
		c->line++;
		return -ENODATA;
	}
	while (!last) {
		int r = field(c, &last, file, err);
		if (r < 0)
			return r;
		if (n < 3 && !(*out[n] = trimmed(c->buf, c->len)))
			return gerr_set(err, ENOMEM, "%s: out of memory", file);
		n++;
	}
	c->line++;
	if (n == 1 && !*k->name) /* spaces only: a blank line to a reader */
		return -ENODATA;
	if (n != 3)
		return gerr_set(err, EINVAL,
				"%s:%u: %u fields where dcgm-exporter needs 3 (DCGM field, Prometheus type, help); "
				"quote a help text that has a comma",
				file, k->line, n);
	return classify(k, file, err);
}

static void counter_free(struct exp_counter *k)
{
	free(k->name);
	free(k->type);
	free(k->help);
	memset(k, 0, sizeof(*k));
}

int exp_collectors_parse(const char *text, size_t len, const char *file, struct exp_collectors *ret, struct gerr *err)
{
	struct exp_collectors c = {0};
	struct csv *in = calloc(1, sizeof(*in));
	int r = 0;

	if (!in || !(c.file = strdup(file ? file : "collectors")) ||
	    !(c.v = calloc(EXP_COLLECTORS_MAX_RECORDS, sizeof(*c.v)))) {
		r = gerr_set(err, ENOMEM, "%s: out of memory", file);
		goto out;
	}
	in->s = text;
	in->end = text + len;
	in->line = 1;
	if (len > EXP_COLLECTORS_MAX_BYTES || memchr(text, '\0', len)) {
		r = gerr_set(err, EINVAL, "%s: not a collectors CSV file (over %u bytes, or binary)", file,
			     EXP_COLLECTORS_MAX_BYTES);
		goto out;
	}
	while (in->s < in->end) {
		if (c.n == EXP_COLLECTORS_MAX_RECORDS) {
			r = gerr_set(err, E2BIG, "%s:%u: more than %u records", file, in->line,
				     EXP_COLLECTORS_MAX_RECORDS);
			goto out;
		}
		r = record(in, &c.v[c.n], file, err);
		if (r == -ENODATA) {
			counter_free(&c.v[c.n]);
			r = 0;
			continue;
		}
		if (r < 0)
			goto out;
		c.n++;
	}
	*ret = c;
	memset(&c, 0, sizeof(c));
out:
	if (r < 0 && c.v)
		counter_free(&c.v[c.n]);
	exp_collectors_free(&c);
	free(in);
	return r;
}

int exp_collectors_load(const char *path, struct exp_collectors *ret, struct gerr *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = read_file(path, EXP_COLLECTORS_MAX_BYTES, &text, &len, err);
	if (r < 0)
		return gerr_prefix(err, "collectors file (-f, DCGM_EXPORTER_COLLECTORS): ");
	return exp_collectors_parse(text, len, path, ret, err);
}

void exp_collectors_free(struct exp_collectors *c)
{
	for (size_t i = 0; c->v && i < c->n; i++)
		counter_free(&c->v[i]);
	free(c->v);
	free(c->file);
	memset(c, 0, sizeof(*c));
}
