/* SPDX-License-Identifier: Apache-2.0 */
/* The one option engine: one setter, the layers default < file < env < flag, getopt and --help from rows. */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/argv.h"
#include "util/fileio.h"
#include "util/opt.h"
#include "util/optspec.h"

size_t optspec_count(const struct optspec *rows)
{
	size_t n = 0;

	while (rows[n].kind != OPT_END)
		n++;
	return n;
}

const struct optspec *optspec_by_key(const struct optspec *rows, const char *key)
{
	for (const struct optspec *o = rows; o->kind != OPT_END; o++)
		if (o->key && streq(o->key, key))
			return o;
	return NULL;
}

const struct optspec *optspec_by_name(const struct optspec *rows, const char *name)
{
	for (const struct optspec *o = rows; o->kind != OPT_END; o++)
		if (streq(o->name, name) || (o->alias && streq(o->alias, name)))
			return o;
	return NULL;
}

const char *optspec_enum_name(const struct optspec *o, int value)
{
	const struct enum_name *row =
	    enum_row_by_value(o->names, o->n_names, sizeof(*o->names), offsetof(struct enum_name, value), value);

	return row ? row->name : "?";
}

/* The choices of an ENUM or FLAGS row, "a|b|c", for messages. */
static void choices(const struct optspec *o, char *buf, size_t size)
{
	size_t l = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < o->n_names && l < size; i++)
		l += (size_t)snprintf(buf + l, size - l, "%s%s", i ? "|" : "", o->names[i].name);
}

/* True when a '/'-separated component of path is "..". */
static bool has_dotdot(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p += 2)
		if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return true;
	return false;
}

/* Text into a STR/PATH/FILE field: the row's inline buffer, or an owned copy (at most .max characters when
 * set) replacing the old one. */
static int set_text(const struct optspec *o, void *field, const char *v, struct gerr *err)
{
	char *copy;

	if (o->size) {
		if (strlen(v) >= o->size)
			return gerr_set(err, ENAMETOOLONG, "longer than %zu characters", o->size - 1);
		memcpy(field, v, strlen(v) + 1);
		return 0;
	}
	if (o->max && strlen(v) > o->max)
		return gerr_set(err, ENAMETOOLONG, "longer than %lu characters", o->max);
	copy = strdup(v);
	if (!copy)
		return gerr_set(err, ENOMEM, "out of memory");
	free(*(char **)field);
	*(char **)field = copy;
	return 0;
}

int optspec_check_path(const char *v, bool relative_ok, struct gerr *err)
{
	if (!relative_ok && v[0] && v[0] != '/')
		return gerr_set(err, EINVAL, "must be an absolute path");
	/* every host path is read under --root: a '..' would climb out of it */
	if (has_dotdot(v))
		return gerr_set(err, EINVAL, "path must not contain '..'; give the real absolute path");
	return 0;
}

static int set_path(const struct optspec *o, void *field, const char *v, struct gerr *err)
{
	int r = optspec_check_path(v, false, err);

	return r < 0 ? r : set_text(o, field, v, err);
}

/* As upstream's os.Open: relative to the working directory; kept absolute, so a reload reads the same file. */
static int set_file(const struct optspec *o, void *field, const char *v, struct gerr *err)
{
	_cleanup_free_ char *abs = NULL;
	int r = path_absolute(v, &abs, err);

	return r < 0 ? r : set_text(o, field, abs, err);
}

/*
 * An unsigned number as Go's strconv.ParseUint(s, 0, ...) reads a flag's value: decimal, 0x hex,
 * 0o or a leading 0 octal, 0b binary; no blank, no sign. Go's '_' digit separators are refused
 * (docs/reference/go-parsing.md).
 */
static int set_uint(const struct optspec *o, void *field, const char *v, struct gerr *err)
{
	static const struct {
		const char *prefix;
		int base;
	} bases[] = {{"0x", 16}, {"0X", 16}, {"0o", 8}, {"0O", 8}, {"0b", 2}, {"0B", 2}};
	const char *digits = v;
	int base = 10;
	char *end;
	unsigned long n;

	for (size_t i = 0; i < ELEMENTSOF(bases); i++)
		if (strncmp(v, bases[i].prefix, 2) == 0) {
			digits = v + 2;
			base = bases[i].base;
		}
	if (base == 10 && v[0] == '0' && v[1])
		base = 8; /* Go: a leading 0 is octal */
	errno = 0;
	n = strtoul(digits, &end, base);
	if (!isalnum((unsigned char)digits[0]) || errno || end == digits || *end || n < o->min || n > o->max)
		return gerr_set(err, EINVAL, "want a whole number in %lu..%lu", o->min, o->max);
	*(unsigned *)field = (unsigned)n;
	return 0;
}

static int set_enum(const struct optspec *o, void *field, const char *v, struct gerr *err)
{
	const struct enum_name *row =
	    enum_row_by_name(o->names, o->n_names, sizeof(*o->names), offsetof(struct enum_name, value),
			     offsetof(struct enum_name, name), v, o->icase);
	char want[256];

	if (!row) {
		choices(o, want, sizeof(want));
		return gerr_set(err, EINVAL, "must be one of %s", want);
	}
	*(int *)field = row->value;
	return 0;
}

/*
 * A comma list of names, their values OR-ed. Each item is trimmed of blanks on both sides and none
 * may be empty, as urfave/cli's StringSlice (docs/reference/go-parsing.md); with .empty_none an
 * empty item is no name (upstream passes it on to a library that matches nothing with it).
 */
static int set_flags(const struct optspec *o, void *field, const char *v, struct gerr *err)
{
	unsigned bits = 0;
	char want[256];

	choices(o, want, sizeof(want));
	for (const char *s = v;; s++) {
		size_t n, k, len = strcspn(s, ",");

		while (len > 0 && isblank((unsigned char)*s))
			s++, len--;
		for (n = len; n > 0 && isblank((unsigned char)s[n - 1]);)
			n--;
		if (n == 0 && !o->empty_none)
			return gerr_set(err, EINVAL, "an empty %s in the list; valid: %s", o->want ? o->want : "name",
					want);
		for (k = 0; n > 0 && k < o->n_names; k++)
			if (strlen(o->names[k].name) == n && strncmp(o->names[k].name, s, n) == 0)
				break;
		if (n > 0 && k == o->n_names)
			return gerr_set(err, EINVAL, "unknown %s \"%.*s\"; valid: %s", o->want ? o->want : "name",
					(int)n, s, want);
		if (n > 0)
			bits |= (unsigned)o->names[k].value;
		s += len;
		if (*s != ',')
			break;
	}
	*(unsigned *)field = bits;
	return 0;
}

/* One more value of a LIST row (borrowed: argv and env outlive the options). */
static int set_list(const struct optspec *o, void *field, const char *v, struct gerr *err)
{
	struct optspec_list *l = field;

	if (l->n == (o->max ? o->max : OPTSPEC_LIST_MAX))
		return gerr_set(err, E2BIG, "given more than %zu times", l->n);
	l->v[l->n++] = v;
	return 0;
}

/* ms as Go's Duration.String() writes it: "500ms", "1.5s", "1m30s", "168h0m0s". */
static void format_ms(unsigned long ms, char *buf, size_t size)
{
	unsigned long h = ms / 3600000, m = ms / 60000 % 60, sec = ms / 1000 % 60, frac = ms % 1000;
	size_t l = 0;

	if (ms < 1000) {
		snprintf(buf, size, "%lums", ms);
		return;
	}
	if (h)
		l += (size_t)snprintf(buf + l, size - l, "%luh", h);
	if (h || m)
		l += (size_t)snprintf(buf + l, size - l, "%lum", m);
	if (l < size)
		l += (size_t)snprintf(buf + l, size - l, "%lu", sec);
	if (frac && l < size) {
		l += (size_t)snprintf(buf + l, size - l, ".%03lu", frac);
		while (l > 0 && buf[l - 1] == '0')
			buf[--l] = '\0';
	}
	if (l < size)
		snprintf(buf + l, size - l, "s");
}

/* A word of .names (its value), else a Go duration of at least .min ms and, when .max is set, at most .max ms. */
static int set_duration(const struct optspec *o, void *field, const char *v, struct gerr *err)
{
	const struct enum_name *word =
	    enum_row_by_name(o->names, o->n_names, sizeof(*o->names), offsetof(struct enum_name, value),
			     offsetof(struct enum_name, name), v, false);
	int64_t ns;

	if (word)
		return *(int64_t *)field = word->value, 0;
	if (o->bare_ms && v[0] >= '0' && v[0] <= '9' && strspn(v, "0123456789") == strlen(v) && strlen(v) <= 9)
		ns = strtoll(v, NULL, 10) * (int64_t)o->bare_ms * OPT_NSEC_PER_MSEC; /* nine digits: no overflow */
	else if (opt_parse_duration(v, &ns) < 0)
		return gerr_set(err, EINVAL, "want a Go duration such as 90s, 1m30s, 500ms%s%s",
				o->n_names ? ", or " : "", o->n_names ? o->names[0].name : "");
	if (ns < (int64_t)o->min * OPT_NSEC_PER_MSEC || (o->max && ns > (int64_t)o->max * OPT_NSEC_PER_MSEC)) {
		char lo[32], hi[32] = "";

		format_ms(o->min, lo, sizeof(lo));
		if (o->max)
			format_ms(o->max, hi, sizeof(hi));
		return gerr_set(err, ERANGE, "want %s%s%s%s%s%s", o->max ? "" : "at least ", lo, o->max ? " to " : "",
				hi, o->n_names ? ", or " : "", o->n_names ? o->names[0].name : "");
	}
	*(int64_t *)field = ns;
	return 0;
}

/* May o be given without a value: a switch, --help, --version, or a CALL row that takes none. */
static bool may_lack_value(const struct optspec *o)
{
	return o->kind == OPT_SET || o->kind == OPT_BOOL || o->kind == OPT_HELP || o->kind == OPT_VERSION ||
	       (o->kind == OPT_CALL && !o->arg);
}

/* Text borrowed as given (ARGV: argv, env and defaults outlive the options). */
static int set_argv(const struct optspec *o, void *field, const char *v, struct gerr *err)
{
	(void)o, (void)err;
	*(const char **)field = v;
	return 0;
}

/* Given on the command line without a value: true; any other value is a boolean. */
static int set_bool(const struct optspec *o, void *field, const char *v, struct gerr *err)
{
	(void)o;
	if (opt_parse_bool(v ? v : "true", field) < 0)
		return gerr_set(err, EINVAL, "want true or false");
	return 0;
}

/* The setter of each kind that writes its field (CALL, HELP and VERSION are optspec_set()'s). */
static int (*const setters[])(const struct optspec *o, void *field, const char *v, struct gerr *err) = {
    [OPT_ARGV] = set_argv, [OPT_STR] = set_text,    [OPT_PATH] = set_path, [OPT_FILE] = set_file,
    [OPT_SET] = set_bool,  [OPT_BOOL] = set_bool,   [OPT_UINT] = set_uint, [OPT_DURATION] = set_duration,
    [OPT_ENUM] = set_enum, [OPT_FLAGS] = set_flags, [OPT_LIST] = set_list,
};

int optspec_set(const struct optspec *o, void *opts, const char *value, struct gerr *err)
{
	/* NULL: a flag given without a value */
	if (!value && !may_lack_value(o))
		return gerr_set(err, EINVAL, "needs a value");
	if (o->kind == OPT_CALL)
		return o->call(opts, value, err);
	if (o->kind == OPT_HELP || o->kind == OPT_VERSION)
		return OPTSPEC_DONE;
	if ((size_t)o->kind >= ELEMENTSOF(setters) || !setters[o->kind])
		return gerr_set(err, EINVAL, "internal error: no such option kind");
	return setters[o->kind](o, (char *)opts + o->off, value, err);
}

/*
 * The value of o's env vars (NULL: none to apply) and the index of the one read in *ret_k, or
 * SIZE_MAX when none is set. In URFAVE mode an empty one is read (the first set wins) even where
 * it leaves the value alone.
 */
static const char *env_value(const struct optspec *o, enum optspec_env_mode mode, size_t *ret_k)
{
	*ret_k = SIZE_MAX;
	for (size_t k = 0; k < ELEMENTSOF(o->env) && o->env[k]; k++) {
		const char *v = getenv(o->env[k]);

		if (v && *v)
			return *ret_k = k, v;
		if (!v || (mode == OPT_ENV_EMPTY_UNSET && !o->env_empty_is_value))
			continue;
		*ret_k = k;
		switch (o->kind) {
		case OPT_SET:
		case OPT_BOOL:
			return "false";
		case OPT_UINT:
		case OPT_DURATION:
		case OPT_CALL:
			return NULL;
		default:
			return v; /* text, and choices or lists the setter then checks */
		}
	}
	return NULL;
}

const char *optspec_env(const struct optspec *o, enum optspec_env_mode mode, const char **name)
{
	size_t k;
	const char *v = env_value(o, mode, &k);

	*name = k != SIZE_MAX ? o->env[k] : o->env[0];
	return v;
}

void optspec_free(const struct optspec *rows, void *opts)
{
	for (const struct optspec *o = rows; o->kind != OPT_END; o++)
		if ((o->kind == OPT_STR || o->kind == OPT_PATH || o->kind == OPT_FILE) && !o->size) {
			char **p = (char **)((char *)opts + o->off);

			free(*p);
			*p = NULL;
		}
}

/* Note in c's given record that row o was given value (NULL: a flag without one) by source (env var k). */
static void note_given(const struct optspec_cli *c, const struct optspec *o, void *opts, enum optspec_src source,
		       size_t k, const char *value)
{
	struct optspec_given *g = c->given_off ? (struct optspec_given *)((char *)opts + c->given_off) : NULL;
	size_t i = (size_t)(o - c->rows);

	if (!g || i >= OPTSPEC_MAX_ROWS)
		return;
	g->src[i] = (unsigned char)source;
	g->env[i] = (unsigned char)(source == OPTSPEC_SRC_ENV ? k : 0);
	g->empty[i] = value && !value[0];
}

/* Set o from value, given by source (env var k), err saying where it came from in c's style. */
static int set_from(const struct optspec_cli *c, const struct optspec *o, void *opts, const char *value,
		    enum optspec_src source, size_t k, const char *src, struct gerr *err)
{
	struct gerr why = {0};
	int r = optspec_set(o, opts, value, &why);
	const char *w;

	if (r >= 0) {
		note_given(c, o, opts, source, k, value);
		return r;
	}
	if (!why.msg[0] && o->want)
		gerr_set(&why, -r, "%s", o->want);
	w = why.msg[0] ? why.msg : "see --help";
	if (c->msg == OPT_MSG_NAME && strncmp(src, "--", 2) == 0) /* the flag's name is the source */
		return gerr_set(err, -r, "%s: %s, got \"%s\"", src, w, value ? value : "");
	if (c->msg == OPT_MSG_NAME)
		return gerr_set(err, -r, "%s: %s: %s, got \"%s\"", src, o->name, w, value ? value : "");
	if (value)
		return gerr_set(err, -r, "%s '%s' is not valid: %s", src, value, w);
	return gerr_set(err, -r, "%s: %s", src, w);
}

int optspec_set_key(const struct optspec_cli *c, void *opts, const char *key, const char *text, const char *where,
		    struct gerr *err)
{
	const struct optspec *o = optspec_by_key(c->rows, key);
	_cleanup_free_ char *src = NULL;

	if (!o)
		return -ENOKEY;
	assert(o->kind != OPT_ARGV); /* a file's text does not outlive the file: the row must own a copy */
	/* the whole place, however long the file's name: an error must say where */
	if (asprintf(&src, "%s: %s", where, key) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	return set_from(c, o, opts, text, OPTSPEC_SRC_FILE, 0, src, err);
}

int optspec_defaults(const struct optspec_cli *c, void *opts, struct gerr *err)
{
	int r;

	for (const struct optspec *o = c->rows; o->kind != OPT_END; o++)
		if (o->def && (r = set_from(c, o, opts, o->def, OPTSPEC_SRC_DEFAULT, 0, "default", err)) < 0)
			return r;
	return 0;
}

enum optspec_src optspec_source(const struct optspec *rows, size_t i, const struct optspec_given *g, char *buf,
				size_t size)
{
	enum optspec_src s = g && i < OPTSPEC_MAX_ROWS ? (enum optspec_src)g->src[i] : OPTSPEC_SRC_NONE;

	if (!buf)
		return s;
	switch (s) {
	case OPTSPEC_SRC_FLAG:
		snprintf(buf, size, "--%s", rows[i].name);
		break;
	case OPTSPEC_SRC_ENV:
		snprintf(buf, size, "env %s", rows[i].env[g->env[i] < ELEMENTSOF(rows[i].env) ? g->env[i] : 0]);
		break;
	case OPTSPEC_SRC_FILE:
		snprintf(buf, size, "the config file");
		break;
	default:
		snprintf(buf, size, "the default");
	}
	return s;
}

int optspec_has_arg(const struct optspec *o)
{
	if (o->kind == OPT_BOOL)
		return optional_argument;
	return o->arg ? required_argument : no_argument;
}

int optspec_short(const struct optspec_cli *c, const struct optspec *o)
{
	if (o->short_name || o->kind != OPT_VERSION || !c->version_v)
		return o->short_name;
	for (const struct optspec *r = c->rows; r->kind != OPT_END; r++)
		if (r->short_name == 'v')
			return 0;
	return 'v';
}

/*
 * The flags given, in order (a repeatable CALL row sees each); a FLAGS row's repeats are one
 * comma-joined value at its first place, as urfave/cli's StringSliceFlag collects them.
 */
struct given {
	size_t n, cap;
	struct {
		size_t row;
		const char *val;
	} * occ;
	char *joined[OPTSPEC_MAX_ROWS];
	ssize_t first[OPTSPEC_MAX_ROWS]; /* index in occ of a row's first occurrence, -1 none */
};

static void given_free(struct given *g)
{
	free(g->occ);
	for (size_t i = 0; i < OPTSPEC_MAX_ROWS; i++)
		free(g->joined[i]);
}

/*
 * The token getopt_long stopped at, for a message: "-x" for a short option (getopt keeps its place in
 * a group "-abx", so argv[optind - 1] may be the token before), else the long option as written.
 */
static const char *bad_token(char **argv, char *buf, size_t size)
{
	if (optopt > 0 && optopt < 256) {
		snprintf(buf, size, "-%c", optopt);
		return buf;
	}
	return argv[optind - 1];
}

static int unknown(const struct optspec_cli *c, const char *arg, struct gerr *err)
{
	size_t l = strcspn(arg, "=");

	for (const struct optspec_hint *h = c->hints; h && h->flag; h++)
		if (strlen(h->flag) == l && strncmp(h->flag, arg, l) == 0)
			return gerr_set(err, EINVAL, "unknown option '%s': %s", arg, h->hint);
	return gerr_set(err, EINVAL, "unknown option '%s'", arg);
}

static int add_given(struct given *g, size_t i, const struct optspec *o, const char *val, struct gerr *err)
{
	ssize_t at = g->first[i];
	char *j;

	/* one token can give several options ("-abc"): the list grows as they come */
	if (g->n == g->cap) {
		void *occ = grow_alloc(g->occ, &g->cap, sizeof(*g->occ), 16);

		if (!occ)
			return gerr_set(err, ENOMEM, "out of memory");
		g->occ = occ;
	}
	if (o->kind != OPT_FLAGS || at < 0) {
		g->first[i] = at < 0 ? (ssize_t)g->n : at;
		g->occ[g->n].row = i;
		g->occ[g->n++].val = val;
		return 0;
	}
	if (asprintf(&j, "%s,%s", g->occ[at].val, val) < 0)
		return gerr_set(err, ENOMEM, "out of memory");
	free(g->joined[i]);
	g->occ[at].val = g->joined[i] = j;
	return 0;
}

/* getopt_long's arrays for the rows of c. */
static void build_getopt(const struct optspec_cli *c, size_t total, struct option *lo, char *shorts)
{
	size_t n = 0;

	/* '+': stop at the first operand; ':': a missing value is ':' (not '?'), with its own message */
	snprintf(shorts, 3, "%s%s", c->stop_at_operand ? "+" : "", c->getopt_says ? "" : ":");
	for (size_t i = 0; i < total; i++) {
		const struct optspec *o = &c->rows[i];
		int sh = optspec_short(c, o), val = sh ? sh : 256 + (int)i;

		if (o->env_only)
			continue;
		lo[n++] = (struct option){o->name, optspec_has_arg(o), NULL, val};
		if (o->alias)
			lo[n++] = (struct option){o->alias, optspec_has_arg(o), NULL, val};
		if (sh) {
			size_t l = strlen(shorts);

			shorts[l++] = (char)sh;
			if (optspec_has_arg(o) != no_argument)
				shorts[l++] = ':';
			if (optspec_has_arg(o) == optional_argument)
				shorts[l++] = ':';
			shorts[l] = '\0';
		}
	}
	lo[n] = (struct option){0};
}

/*
 * getopt_long over argv into g; *action from HELP and VERSION rows. Past --help or --version only
 * --version matters: what follows is not checked (the help is what was asked for).
 */
static int read_argv(const struct optspec_cli *c, int argc, char **argv, struct given *g, enum optspec_action *action,
		     struct gerr *err)
{
	struct option lo[2 * OPTSPEC_MAX_ROWS + 1];
	char shorts[3 * OPTSPEC_MAX_ROWS + 3], tok[8];
	size_t total = optspec_count(c->rows);
	const char *bad;
	int ch;

	if (total > OPTSPEC_MAX_ROWS)
		return gerr_set(err, E2BIG, "internal error: too many options");
	for (size_t i = 0; i < OPTSPEC_MAX_ROWS; i++)
		g->first[i] = -1;
	build_getopt(c, total, lo, shorts);
	argv_single_dash_longs(argc, argv, lo, shorts); /* -mig-strategy=mixed, as upstream's CLI */
	/*
	 * getopt_long takes a unique prefix of a long name ("--mig" for --mig-strategy); Go's flag package
	 * wants the whole name, and a flag of a newer upstream that happens to be a prefix of one of ours
	 * must not be taken for ours: anything but an exact name is unknown (before --help: it is refused
	 * wherever it is).
	 */
	if ((bad = argv_inexact_long(argc, argv, lo, shorts)))
		return unknown(c, bad, err);
	optind = 0; /* 0, not 1: glibc then also forgets its place inside a group of an earlier parse */
	opterr = c->getopt_says;
	while ((optopt = 0, ch = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		size_t i;

		for (i = 0; i < total; i++)
			if (ch == (optspec_short(c, &c->rows[i]) ?: 256 + (int)i))
				break;
		if (*action != OPTSPEC_RUN && (i == total || c->rows[i].kind != OPT_VERSION))
			continue;
		if (ch == ':')
			return gerr_set(err, EINVAL, "option '%s' needs a value", bad_token(argv, tok, sizeof(tok)));
		if (i == total) /* getopt said what is wrong, or we say it */
			return c->getopt_says ? gerr_set(err, EINVAL, "%s", "")
					      : unknown(c, bad_token(argv, tok, sizeof(tok)), err);
		if (c->rows[i].kind == OPT_VERSION)
			*action = OPTSPEC_VERSION; /* wins over --help, wherever it is */
		else if (c->rows[i].kind == OPT_HELP)
			*action = OPTSPEC_HELP;
		else if (add_given(g, i, &c->rows[i], optarg, err) < 0)
			return -ENOMEM;
	}
	if (*action == OPTSPEC_RUN && !c->operands && optind < argc)
		return gerr_set(err, EINVAL, "unexpected argument '%s'", argv[optind]);
	return 0;
}

/* The path of the config file: its flag, else its env var; NULL or "" for none. */
static const char *file_path(const struct optspec_cli *c, const struct given *g, const struct optspec *file)
{
	const char *name, *path = NULL;

	for (size_t k = 0; k < g->n; k++)
		if (g->occ[k].row == (size_t)(file - c->rows))
			path = g->occ[k].val;
	return path ?: optspec_env(file, c->env, &name);
}

/* Defaults, then the file, then env vars, then the flags in order. OPTSPEC_DONE: a CALL row ended the run. */
static int apply_layers(const struct optspec_cli *c, const struct given *g, void *opts, enum optspec_fail *fail,
			struct gerr *err)
{
	const struct optspec *file = c->file_opt ? optspec_by_name(c->rows, c->file_opt) : NULL;
	const char *v, *path;
	char src[128];
	size_t ek;
	int r;

	if ((r = optspec_defaults(c, opts, err)) < 0)
		return r;
	if (file && (path = file_path(c, g, file)) && *path && (r = c->load_file(opts, path, err)) < 0)
		return *fail = OPTSPEC_FAIL_FILE, r;
	for (const struct optspec *o = c->rows; o->kind != OPT_END; o++) {
		/* a flag wins over its env var, which is then not even read: a stale bad one does not block the fix */
		if (g->first[o - c->rows] >= 0)
			continue;
		v = env_value(o, c->env, &ek);
		if (!v && ek != SIZE_MAX) /* urfave/cli: set but empty, the value stays; still given */
			note_given(c, o, opts, OPTSPEC_SRC_ENV, ek, "");
		if (!v)
			continue;
		snprintf(src, sizeof(src), "env %s", o->env[ek]);
		if ((r = set_from(c, o, opts, v, OPTSPEC_SRC_ENV, ek, src, err)) < 0)
			return r;
	}
	for (size_t k = 0; k < g->n; k++) {
		const struct optspec *o = &c->rows[g->occ[k].row];

		snprintf(src, sizeof(src), "--%s", o->name);
		if ((r = set_from(c, o, opts, g->occ[k].val, OPTSPEC_SRC_FLAG, 0, src, err)) != 0)
			return r;
	}
	return c->finish ? c->finish(opts, err) : 0;
}

/* What one row must be, as a message, or NULL. */
static const char *row_defect(const struct optspec *o)
{
	bool text = o->kind == OPT_STR || o->kind == OPT_PATH || o->kind == OPT_FILE;

	if (!o->name || !o->name[0])
		return "a row without a name";
	if ((o->kind == OPT_ARGV || o->kind == OPT_LIST) && o->key)
		return "a borrowed (ARGV, LIST) row with a config-file key: the file's text does not outlive the file";
	if (o->kind == OPT_LIST && (o->def || o->max > OPTSPEC_LIST_MAX))
		return "a LIST row with a default (it would be one of the items) or more items than OPTSPEC_LIST_MAX";
	if (o->empty_none && o->kind != OPT_FLAGS)
		return "empty_none on a row that is not a FLAGS row";
	if (o->env_only && (!o->env[0] || o->short_name || o->kind == OPT_HELP || o->kind == OPT_VERSION))
		return "an env-only row without an env var, or with a short letter";
	if (o->size && !text)
		return "an inline buffer on a row that holds no text";
	if (o->bare_ms && o->kind != OPT_DURATION)
		return "a unit for bare numbers on a row that is not a duration";
	if (o->kind == OPT_UINT && (o->max == 0 || o->max > UINT_MAX || o->min > o->max))
		return "a number row without a range that fits an unsigned";
	if ((o->kind == OPT_DURATION || text) && o->max && o->min > o->max)
		return "min above max";
	if ((o->kind == OPT_ENUM || o->kind == OPT_FLAGS) && !o->n_names)
		return "a choice row without names";
	if (o->kind == OPT_CALL && !o->call)
		return "a CALL row without a function";
	if (!o->arg && !may_lack_value(o))
		return "a row that needs a value without an argument name";
	return NULL;
}

/* Is the long name, alias, short letter or key of row a also one of row b? */
static bool rows_clash(const struct optspec_cli *c, const struct optspec *a, const struct optspec *b)
{
	const char *an[] = {a->name, a->alias}, *bn[] = {b->name, b->alias};

	for (size_t i = 0; i < 2; i++)
		for (size_t j = 0; j < 2; j++)
			if (an[i] && bn[j] && streq(an[i], bn[j]))
				return true;
	return (optspec_short(c, a) && optspec_short(c, a) == optspec_short(c, b)) ||
	       (a->key && b->key && streq(a->key, b->key));
}

/*
 * The table's own rules, checked on every parse (not an assert: a release build keeps it): a verb
 * with a bad table fails with an internal error rather than write the wrong type into its options.
 */
static int check_rows(const struct optspec_cli *c, struct gerr *err)
{
	const struct optspec *file = c->file_opt ? optspec_by_name(c->rows, c->file_opt) : NULL;

	if (c->file_opt && (!file || file->def || !c->load_file))
		return gerr_set(err, EINVAL,
				"internal error: option table: the config-file row '%s' is missing, has a "
				"default (never read) or no reader",
				c->file_opt);
	for (const struct optspec *o = c->rows; o->kind != OPT_END; o++) {
		const char *defect = row_defect(o);

		for (const struct optspec *p = c->rows; !defect && p != o; p++)
			if (rows_clash(c, o, p))
				defect = "its name, alias, short letter or config-file key is another row's too";
		if (defect)
			return gerr_set(err, EINVAL, "internal error: option table: --%s: %s", o->name ? o->name : "?",
					defect);
	}
	return 0;
}

int optspec_parse(const struct optspec_cli *c, int argc, char **argv, void *opts, enum optspec_action *action,
		  enum optspec_fail *fail, struct gerr *err)
{
	_cleanup_(given_free) struct given g = {0};
	int r;

	*action = OPTSPEC_RUN;
	*fail = OPTSPEC_FAIL_USAGE;
	if (c->given_off)
		memset((char *)opts + c->given_off, 0, sizeof(struct optspec_given));
	r = check_rows(c, err);
	if (r < 0)
		return r;
	r = read_argv(c, argc, argv, &g, action, err);
	if (r < 0 || *action != OPTSPEC_RUN)
		return r < 0 ? r : 0;
	*fail = OPTSPEC_FAIL_VALUE;
	r = apply_layers(c, &g, opts, fail, err);
	if (r < 0)
		return r;
	*fail = OPTSPEC_OK;
	if (r == OPTSPEC_DONE)
		*action = OPTSPEC_STOP;
	return 0;
}
