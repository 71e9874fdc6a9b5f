/* SPDX-License-Identifier: Apache-2.0 */
/* YAML -> jansson, typed as sigs.k8s.io/yaml types it (the rules are in yaml.h). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "parse/yaml.h"

#define YAML_MAX_DEPTH   64
#define YAML_MAX_ANCHORS 256
/* Nodes a document may expand to through aliases, beyond what its text holds (billion laughs). */
#define YAML_MAX_EXPANDED (1u << 20)

struct where_entry {
	const json_t *container;
	char *key; /* NULL for an array item */
	size_t index;
	struct yaml_pos pos;   /* the key's; an item's value */
	struct yaml_pos value; /* a key's value: where its node starts */
};

struct yaml_where {
	struct where_entry *e;
	size_t n, cap;
	struct yaml_pos root; /* where the (single) document's node starts */
};

struct reader {
	yaml_parser_t p;
	const char *name;
	unsigned flags;
	struct gerr *err;
	struct yaml_where *where; /* NULL when the caller did not ask for positions */
	size_t nodes, max_nodes;  /* nodes read, counting what aliases expand to */
	struct {
		char *name;
		json_t *value;
		size_t nodes;
	} anchors[YAML_MAX_ANCHORS];
	size_t n_anchors;
};

static int rerr(struct reader *r, const yaml_mark_t *m, const char *what)
{
	return gerr_set(r->err, EINVAL, "%s:%zu:%zu: %s", r->name, m->line + 1, m->column + 1, what);
}

static int next(struct reader *r, yaml_event_t *ev)
{
	const yaml_mark_t *m = &r->p.problem_mark;

	if (!yaml_parser_parse(&r->p, ev))
		return gerr_set(r->err, EINVAL, "%s:%zu:%zu: %s", r->name, m->line + 1, m->column + 1,
				r->p.problem ? r->p.problem : "YAML syntax error");
	return 0;
}

/* The next event; 1 (and the event already deleted) when it is `end`. */
static int next_or_end(struct reader *r, yaml_event_t *ev, yaml_event_type_t end)
{
	int k = next(r, ev);

	if (k < 0 || ev->type != end)
		return k;
	yaml_event_delete(ev);
	return 1;
}

/* ---- scalars: go-yaml v2 resolve() ------------------------------------------------------------- */

enum word { W_TRUE, W_FALSE, W_NULL, W_NAN, W_INF, W_NEG_INF };

/* go-yaml v2 resolve.go, resolveMapList (YAML 1.1 booleans; sigs.k8s.io/yaml keeps them). */
static const struct {
	const char *s;
	enum word w;
} words[] = {
    {"y", W_TRUE},    {"Y", W_TRUE},        {"yes", W_TRUE},      {"Yes", W_TRUE},      {"YES", W_TRUE},
    {"true", W_TRUE}, {"True", W_TRUE},     {"TRUE", W_TRUE},     {"on", W_TRUE},       {"On", W_TRUE},
    {"ON", W_TRUE},   {"n", W_FALSE},       {"N", W_FALSE},       {"no", W_FALSE},      {"No", W_FALSE},
    {"NO", W_FALSE},  {"false", W_FALSE},   {"False", W_FALSE},   {"FALSE", W_FALSE},   {"off", W_FALSE},
    {"Off", W_FALSE}, {"OFF", W_FALSE},     {"", W_NULL},         {"~", W_NULL},        {"null", W_NULL},
    {"Null", W_NULL}, {"NULL", W_NULL},     {".nan", W_NAN},      {".NaN", W_NAN},      {".NAN", W_NAN},
    {".inf", W_INF},  {".Inf", W_INF},      {".INF", W_INF},      {"+.inf", W_INF},     {"+.Inf", W_INF},
    {"+.INF", W_INF}, {"-.inf", W_NEG_INF}, {"-.Inf", W_NEG_INF}, {"-.INF", W_NEG_INF},
};

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : 99;
}

/* Go's strconv.ParseInt/ParseUint with base 0: optional sign, 0x 0o 0b prefixes, leading 0 = octal. */
static bool go_int(const char *s, bool *ret_signed, bool *ret_neg, unsigned long long *ret_mag)
{
	unsigned long long u = 0;
	unsigned base = 10;

	*ret_signed = *s == '+' || *s == '-';
	*ret_neg = *s == '-';
	s += *ret_signed;
	if (s[0] == '0' && s[1]) {
		const char *prefixes = "xXoObB";
		const char *p = strchr(prefixes, s[1]);
		static const unsigned bases[] = {16, 16, 8, 8, 2, 2};

		base = p ? bases[p - prefixes] : 8;
		s += p ? 2 : 1;
	}
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned d = (unsigned)digit_value(*s);

		if (d >= base || u > (ULLONG_MAX - d) / base)
			return false;
		u = u * base + d;
	}
	*ret_mag = u;
	return true;
}

static const char *skip_digits(const char *s)
{
	while (isdigit((unsigned char)*s))
		s++;
	return s;
}

/* go-yaml v2's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool float_syntax(const char *s)
{
	const char *d;

	s += *s == '+' || *s == '-';
	if (*s == '.') {
		d = skip_digits(s + 1);
		if (d == s + 1)
			return false;
	} else {
		d = skip_digits(s);
		if (d == s)
			return false;
		if (*d == '.')
			d = skip_digits(d + 1);
	}
	if (*d == 'e' || *d == 'E') {
		s = d + 1 + (d[1] == '+' || d[1] == '-');
		d = skip_digits(s);
		if (d == s)
			return false;
	}
	return *d == '\0';
}

/*
 * A number the way resolve() reads one, or NULL (*ret_r = 0) when s is not one. Text starting with
 * a dot is only tried as a float; otherwise '_' is dropped (1_000 is 1000), then integer, then float.
 */
static json_t *resolve_number(const char *s, int *ret_r)
{
	_cleanup_free_ char *copy = NULL;
	const char *plain = s;
	unsigned long long mag;
	bool sign, neg;
	double d;

	*ret_r = 0;
	if (*s != '.') {
		if (strchr(s, '_')) {
			size_t k = 0;

			if (!(copy = strdup(s))) {
				*ret_r = -ENOMEM;
				return NULL;
			}
			for (const char *p = s; *p; p++)
				if (*p != '_')
					copy[k++] = *p;
			copy[k] = '\0';
			plain = copy;
		}
		if (go_int(plain, &sign, &neg, &mag)) {
			if (!neg && mag <= INT64_MAX)
				return json_integer((json_int_t)mag);
			if (neg && mag <= (unsigned long long)INT64_MAX + 1)
				return json_integer(mag > INT64_MAX ? INT64_MIN : -(json_int_t)mag);
			if (!sign) /* ParseUint: a uint64, which a JSON real carries best */
				return json_real((double)mag);
		}
	}
	if (!float_syntax(plain))
		return NULL;
	d = strtod(plain, NULL);
	/* strconv.ParseFloat fails on overflow: then the scalar is a string */
	return isinf(d) ? NULL : json_real(d);
}

/* The typed value of a plain (or !!bool/!!int/!!float/!!null tagged) scalar; -EINVAL for .inf/.nan. */
static int resolve_plain(const char *s, json_t **ret)
{
	json_t *v = NULL;
	int r;

	/* every word starts with one of these (resolve()'s 'M', '.' and sign hints), or is empty */
	for (size_t i = 0; (!*s || strchr("yYnNtTfFoO~.+-", *s)) && i < ELEMENTSOF(words); i++) {
		if (!streq(s, words[i].s))
			continue;
		if (words[i].w >= W_NAN)
			return -EDOM;
		v = words[i].w == W_TRUE ? json_true() : words[i].w == W_FALSE ? json_false() : json_null();
		*ret = v;
		return 0;
	}
	/* resolve()'s hint: only a sign, a digit or a dot can start a number */
	if (*s == '+' || *s == '-' || *s == '.' || isdigit((unsigned char)*s)) {
		v = resolve_number(s, &r);
		if (r < 0)
			return r;
	}
	if (!v)
		v = json_string(s);
	if (!v)
		return -EILSEQ;
	*ret = v;
	return 0;
}

static bool tag_is(const char *tag, const char *what)
{
	return tag && streq(tag, what);
}

static int read_scalar(struct reader *r, const yaml_event_t *ev, json_t **ret)
{
	const char *s = (const char *)ev->data.scalar.value, *tag = (const char *)ev->data.scalar.tag;
	size_t n = ev->data.scalar.length;
	bool typed = tag ? tag_is(tag, YAML_BOOL_TAG) || tag_is(tag, YAML_INT_TAG) || tag_is(tag, YAML_FLOAT_TAG) ||
			       tag_is(tag, YAML_NULL_TAG)
			 : ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	json_t *v;
	int k;

	/* quoted, !!str, other tags (go-yaml keeps their text), and text with a NUL: strings */
	if (!typed || strlen(s) != n) {
		v = json_stringn(s, n);
		if (!v)
			return rerr(r, &ev->start_mark, "string is not valid UTF-8");
		*ret = v;
		return 0;
	}
	k = resolve_plain(s, &v);
	if (k == -EDOM)
		return rerr(r, &ev->start_mark, "infinity or NaN cannot be represented in JSON; quote it");
	if (k == -EILSEQ)
		return rerr(r, &ev->start_mark, "string is not valid UTF-8");
	if (k < 0)
		return k;
	if (tag_is(tag, YAML_FLOAT_TAG) && json_is_integer(v)) { /* resolve() turns !!float 1 into 1.0 */
		json_t *f = json_real((double)json_integer_value(v));

		json_decref(v);
		v = f;
		if (!v)
			return -ENOMEM;
	}
	if (tag && !(tag_is(tag, YAML_BOOL_TAG)    ? json_is_boolean(v)
		     : tag_is(tag, YAML_INT_TAG)   ? json_is_integer(v)
		     : tag_is(tag, YAML_FLOAT_TAG) ? json_is_real(v)
						   : json_is_null(v))) {
		json_decref(v);
		return rerr(r, &ev->start_mark, "the value does not match its YAML tag");
	}
	*ret = v;
	return 0;
}

/* ---- keys: sigs.k8s.io/yaml convertToJSONableObject() -------------------------------------------- */

/* Go's strconv.FormatFloat(f, 'g', -1, 32): the shortest float32 digits, %e below 1e-4 or from 1e6. */
static void go_float32_text(double d, char *buf, size_t n)
{
	float f = (float)d;
	int p, exp;

	if (isnan(f) || isinf(f)) { /* 1e39 is +Inf as a float32: sigs.k8s.io/yaml writes ".inf" */
		snprintf(buf, n, "%s", isnan(f) ? ".nan" : f > 0 ? ".inf" : "-.inf");
		return;
	}
	for (p = 1; p < 9; p++) {
		snprintf(buf, n, "%.*e", p - 1, (double)f);
		if ((float)strtod(buf, NULL) == f)
			break;
	}
	snprintf(buf, n, "%.*e", p - 1, (double)f);
	exp = atoi(strchr(buf, 'e') + 1);
	if (exp >= -4 && exp < 6)
		snprintf(buf, n, "%.*f", MAX(p - 1 - exp, 0), (double)f);
}

/* The JSON key for a YAML key node already read into *key (replaced by a string). */
static int key_to_string(struct reader *r, const yaml_mark_t *m, json_t **key)
{
	char buf[64];
	json_t *s;

	switch (json_typeof(*key)) {
	case JSON_STRING:
		return 0;
	case JSON_INTEGER:
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(*key));
		break;
	case JSON_REAL:
		go_float32_text(json_real_value(*key), buf, sizeof(buf));
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		snprintf(buf, sizeof(buf), "%s", json_is_true(*key) ? "true" : "false");
		break;
	default:
		return rerr(r, m, "a mapping key must be a string, number or boolean");
	}
	s = json_string(buf);
	if (!s)
		return -ENOMEM;
	json_decref(*key);
	*key = s;
	return 0;
}

/* ---- positions ----------------------------------------------------------------------------------- */

static struct yaml_pos pos_of(const yaml_mark_t *m)
{
	return (struct yaml_pos){(unsigned)m->line + 1, (unsigned)m->column + 1};
}

/* Where a key (its value at vm; NULL for an item) or item of c is. */
static int where_add(struct reader *r, const json_t *c, const char *key, size_t index, const yaml_mark_t *m,
		     const yaml_mark_t *vm)
{
	struct yaml_where *w = r->where;
	struct where_entry *e;

	if (!w)
		return 0;
	if (w->n == w->cap) {
		e = grow_alloc(w->e, &w->cap, sizeof(*e), 64);
		if (!e)
			return -ENOMEM;
		w->e = e;
	}
	e = &w->e[w->n];
	*e = (struct where_entry){.container = c, .index = index, .pos = pos_of(m), .value = pos_of(vm ? vm : m)};
	if (key && !(e->key = strdup(key)))
		return -ENOMEM;
	w->n++;
	return 0;
}

static const struct where_entry *where_find(const struct yaml_where *w, const json_t *c, const char *key, size_t index)
{
	/* from the end: a duplicate key read later (the one whose value won) is found first */
	for (size_t i = w ? w->n : 0; i-- > 0;) {
		const struct where_entry *e = &w->e[i];

		if (e->container == c && (key ? e->key && streq(e->key, key) : !e->key && e->index == index))
			return e;
	}
	return NULL;
}

int yaml_where_key(const struct yaml_where *w, const json_t *object, const char *key, struct yaml_pos *ret)
{
	const struct where_entry *e = key ? where_find(w, object, key, 0) : NULL;

	if (!e)
		return -ENOENT;
	*ret = e->pos;
	return 0;
}

/* n's kids from its value's members or items and their places; *budget nodes may still be made. */
static int tree_fill(const struct yaml_where *w, struct yaml_node *n, unsigned depth, size_t *budget)
{
	size_t count = json_is_object(n->v) ? json_object_size(n->v) : json_is_array(n->v) ? json_array_size(n->v) : 0;
	const char *k;
	json_t *v;
	size_t i = 0;
	int r;

	if (!count || !depth)
		return 0;
	if (count > *budget)
		return -E2BIG;
	*budget -= count;
	n->kids = calloc(count, sizeof(*n->kids));
	if (!n->kids)
		return -ENOMEM;
	n->n = count;
	if (json_is_object(n->v)) {
		json_object_foreach (n->v, k, v) {
			const struct where_entry *e = where_find(w, n->v, k, 0);

			n->kids[i] = (struct yaml_node){.v = v, .key = k, .at = n->at, .key_at = n->at};
			if (e)
				n->kids[i].key_at = e->pos, n->kids[i].at = e->value;
			i++;
		}
	} else {
		json_array_foreach (n->v, i, v) {
			const struct where_entry *e = where_find(w, n->v, NULL, i);

			n->kids[i] = (struct yaml_node){.v = v, .at = e ? e->pos : n->at};
		}
	}
	for (i = 0; i < count; i++)
		if ((r = tree_fill(w, &n->kids[i], depth - 1, budget)) < 0)
			return r;
	return 0;
}

static void node_clear(struct yaml_node *n)
{
	for (size_t i = 0; i < n->n; i++)
		node_clear(&n->kids[i]);
	free(n->kids);
}

void yaml_node_free(struct yaml_node *n)
{
	if (!n)
		return;
	node_clear(n);
	free(n);
}

int yaml_where_tree(const struct yaml_where *w, json_t *doc, unsigned max_depth, struct yaml_node **ret)
{
	_cleanup_(yaml_node_freep) struct yaml_node *root = calloc(1, sizeof(*root));
	size_t budget = YAML_TREE_MAX_NODES;
	int r;

	if (!root)
		return -ENOMEM;
	*root = (struct yaml_node){.v = doc, .at = w && w->root.line ? w->root : (struct yaml_pos){1, 1}};
	r = tree_fill(w, root, max_depth, &budget);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(root);
	return 0;
}

void yaml_where_free(struct yaml_where *w)
{
	if (!w)
		return;
	free_members(w->e, w->n, key);
	free(w);
}

/* ---- the tree ------------------------------------------------------------------------------------ */

static int read_node(struct reader *r, yaml_event_t *ev, unsigned depth, json_t **ret);

/* Reads the next event as a node (key or value); *ret only on success. */
static int read_next_node(struct reader *r, unsigned depth, json_t **ret, yaml_mark_t *ret_mark)
{
	yaml_event_t ev;
	int k = next(r, &ev);

	if (k < 0)
		return k;
	*ret_mark = ev.start_mark;
	k = read_node(r, &ev, depth, ret);
	yaml_event_delete(&ev);
	return k;
}

static int map_put(struct reader *r, json_t *c, json_t *key, json_t *val, const yaml_mark_t *km, const yaml_mark_t *vm)
{
	const char *k = json_string_value(key);

	if (json_object_get(c, k) && (r->flags & YAML_STRICT)) {
		json_decref(val);
		return rerr(r, km, "duplicate key; a strict reader (the CDI library) rejects the file");
	}
	if (json_object_set_new(c, k, val) < 0)
		return -ENOMEM;
	return where_add(r, c, k, 0, km, vm);
}

/* A mapping entry whose key node is already read (into key, which this consumes). */
static int map_entry(struct reader *r, json_t *c, json_t *key, const yaml_mark_t *km, unsigned depth)
{
	json_t *val = NULL;
	yaml_mark_t vm;
	int k = key_to_string(r, km, &key);

	if (k >= 0)
		k = read_next_node(r, depth, &val, &vm);
	if (k >= 0)
		k = map_put(r, c, key, val, km, &vm);
	json_decref(key);
	return k;
}

static int seq_item(struct reader *r, json_t *c, json_t *val, const yaml_mark_t *m)
{
	if (json_array_append_new(c, val) < 0)
		return -ENOMEM;
	return where_add(r, c, NULL, json_array_size(c) - 1, m, NULL);
}

static int read_collection(struct reader *r, bool mapping, unsigned depth, json_t **ret)
{
	json_auto_t *c = mapping ? json_object() : json_array();

	if (!c)
		return -ENOMEM;
	for (;;) {
		yaml_event_t ev;
		yaml_mark_t m;
		json_t *node = NULL;
		int k = next_or_end(r, &ev, mapping ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT);

		if (k < 0)
			return k;
		if (k > 0)
			break;
		m = ev.start_mark;
		k = read_node(r, &ev, depth + 1, &node);
		yaml_event_delete(&ev);
		if (k >= 0)
			k = mapping ? map_entry(r, c, node, &m, depth + 1) : seq_item(r, c, node, &m);
		if (k < 0)
			return k;
	}
	*ret = TAKE_PTR(c);
	return 0;
}

static int remember(struct reader *r, const yaml_char_t *anchor, json_t *v, size_t nodes)
{
	if (!anchor)
		return 0;
	if (r->n_anchors == YAML_MAX_ANCHORS)
		return gerr_set(r->err, E2BIG, "%s: more than %d YAML anchors", r->name, YAML_MAX_ANCHORS);
	r->anchors[r->n_anchors].name = strdup((const char *)anchor);
	if (!r->anchors[r->n_anchors].name)
		return -ENOMEM;
	r->anchors[r->n_anchors].nodes = nodes;
	r->anchors[r->n_anchors++].value = json_incref(v);
	return 0;
}

/* An alias is the latest node with that anchor (YAML 1.1 §3.2.2.2); it is shared, not copied. */
static int read_alias(struct reader *r, const yaml_event_t *ev, json_t **ret)
{
	for (size_t k = r->n_anchors; k-- > 0;)
		if (streq(r->anchors[k].name, (const char *)ev->data.alias.anchor)) {
			r->nodes += r->anchors[k].nodes;
			if (r->nodes > r->max_nodes)
				return gerr_set(r->err, E2BIG, "%s:%zu:%zu: aliases expand the document too far",
						r->name, ev->start_mark.line + 1, ev->start_mark.column + 1);
			*ret = json_incref(r->anchors[k].value);
			return 0;
		}
	return rerr(r, &ev->start_mark, "unknown YAML alias");
}

/* Reads the node that starts with ev (ev stays the caller's); *ret only on success. */
static int read_node(struct reader *r, yaml_event_t *ev, unsigned depth, json_t **ret)
{
	const yaml_char_t *anchor = NULL;
	size_t before = r->nodes;
	json_t *v = NULL;
	int k;

	if (depth > YAML_MAX_DEPTH)
		return rerr(r, &ev->start_mark, "nested too deeply");
	r->nodes++;
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		anchor = ev->data.scalar.anchor;
		k = read_scalar(r, ev, &v);
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = ev->data.sequence_start.anchor;
		k = read_collection(r, false, depth, &v);
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = ev->data.mapping_start.anchor;
		k = read_collection(r, true, depth, &v);
		break;
	case YAML_ALIAS_EVENT:
		return read_alias(r, ev, ret);
	default:
		return rerr(r, &ev->start_mark, "unexpected YAML event");
	}
	if (k >= 0)
		k = remember(r, anchor, v, r->nodes - before);
	if (k < 0) {
		json_decref(v);
		return k;
	}
	*ret = v;
	return 0;
}

/* Stream: STREAM-START (DOCUMENT-START node DOCUMENT-END)* STREAM-END. */
static int read_stream(struct reader *r, json_t *docs)
{
	for (;;) {
		yaml_event_t ev;
		yaml_mark_t m;
		json_t *doc = NULL;
		int k = next_or_end(r, &ev, YAML_STREAM_END_EVENT);

		if (k != 0)
			return MIN(k, 0);
		if (ev.type != YAML_DOCUMENT_START_EVENT) { /* STREAM-START, DOCUMENT-END */
			yaml_event_delete(&ev);
			continue;
		}
		m = ev.start_mark;
		yaml_event_delete(&ev);
		if (json_array_size(docs) == 1 && !(r->flags & YAML_ALL_DOCUMENTS))
			return rerr(r, &m, "more than one YAML document; this file holds one");
		if ((k = read_next_node(r, 0, &doc, &m)) < 0)
			return k;
		if (r->where && !r->where->root.line)
			r->where->root = pos_of(&m);
		if (json_array_append_new(docs, doc) < 0)
			return -ENOMEM;
		/* the documents array is the result only with YAML_ALL_DOCUMENTS */
		if ((r->flags & YAML_ALL_DOCUMENTS) &&
		    (k = where_add(r, docs, NULL, json_array_size(docs) - 1, &m, NULL)) < 0)
			return k;
	}
}

int yaml_to_json(const char *buf, size_t len, const char *filename, unsigned flags, json_t **ret,
		 struct yaml_where **ret_where, struct gerr *err)
{
	struct reader r = {.name = filename, .flags = flags, .err = err, .max_nodes = YAML_MAX_EXPANDED + len};
	json_auto_t *docs = json_array();
	int k;

	if (ret_where && !(r.where = calloc(1, sizeof(*r.where))))
		return gerr_set(err, ENOMEM, "out of memory");
	if (!docs || !yaml_parser_initialize(&r.p)) {
		yaml_where_free(r.where);
		return gerr_set(err, ENOMEM, "out of memory");
	}
	yaml_parser_set_input_string(&r.p, (const unsigned char *)buf, len);
	k = read_stream(&r, docs);
	yaml_parser_delete(&r.p);
	for (size_t i = 0; i < r.n_anchors; i++) {
		free(r.anchors[i].name);
		json_decref(r.anchors[i].value);
	}
	if (k < 0) {
		yaml_where_free(r.where);
		return k == -ENOMEM ? gerr_set(err, ENOMEM, "out of memory") : k;
	}
	if (flags & YAML_ALL_DOCUMENTS)
		*ret = TAKE_PTR(docs);
	else /* no document at all reads as null, as YAMLToJSON("") */
		*ret = json_array_size(docs) ? json_incref(json_array_get(docs, 0)) : json_null();
	if (ret_where)
		*ret_where = r.where;
	return 0;
}
