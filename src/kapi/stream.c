/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The watch event stream decoder (docs/reference/kube-api.md §2.2). The server encodes each event
 * with Go's json.Encoder, so each is one JSON object followed by a newline; we frame by the JSON
 * itself (client-go's json.Framer reads objects the same way), which tolerates a missing newline too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kapi/wire.h"
#include "util/macro.h"

static const struct {
	const char *name;
	enum kapi_event_type type;
} event_types[] = {
    /* k8s.io/apimachinery pkg/watch/watch.go EventType */
    {"ADDED", KAPI_EVENT_ADDED},       {"MODIFIED", KAPI_EVENT_MODIFIED}, {"DELETED", KAPI_EVENT_DELETED},
    {"BOOKMARK", KAPI_EVENT_BOOKMARK}, {"ERROR", KAPI_EVENT_ERROR},
};

void kapi_stream_init(struct kapi_stream *s, size_t max)
{
	*s = (struct kapi_stream){.max = max};
}

void kapi_stream_done(struct kapi_stream *s)
{
	free(s->buf);
	kapi_stream_init(s, s->max);
}

bool kapi_stream_pending(const struct kapi_stream *s)
{
	return s->len > 0;
}

static int append(struct kapi_stream *s, const char *data, size_t n)
{
	if (s->len + n > s->cap) {
		char *b = grow_bytes_max(s->buf, &s->cap, s->len + n, 4096, s->max);

		if (!b)
			return -ENOMEM;
		s->buf = b;
	}
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	return 0;
}

static int decode(struct kapi_stream *s, const char *text, size_t len, kapi_event_fn fn, void *userdata,
		  struct gerr *err)
{
	json_error_t jerr;
	json_t *ev = json_loadb(text, len, 0, &jerr), *type, *obj;
	int r = 0;

	if (!ev)
		return gerr_set(err, EBADMSG, "watch event %llu is not JSON: %s (byte %d)", s->events + 1, jerr.text,
				jerr.position);
	s->events++;
	type = json_object_get(ev, "type");
	obj = json_object_get(ev, "object");
	if (!json_is_string(type) || !json_is_object(obj)) {
		json_decref(ev);
		return gerr_set(err, EBADMSG, "watch event %llu has no \"type\" string and \"object\" mapping",
				s->events);
	}
	for (size_t i = 0; i < ELEMENTSOF(event_types); i++)
		if (streq(json_string_value(type), event_types[i].name)) {
			r = fn(event_types[i].type, obj, userdata);
			json_decref(ev);
			return r;
		}
	s->skipped++;
	json_decref(ev);
	return 0;
}

int kapi_stream_feed(struct kapi_stream *s, const char *data, size_t len, kapi_event_fn fn, void *userdata,
		     struct gerr *err)
{
	size_t start = 0; /* where the bytes of the unfinished event begin in data */
	int r;

	for (size_t i = 0; i < len; i++) {
		char c = data[i];

		if (!s->depth) { /* between events */
			if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
				continue;
			if (c != '{')
				return gerr_set(err, EBADMSG, "watch stream: '%c' (0x%02x) where an event should start",
						c >= 0x20 && c < 0x7f ? c : '?', (unsigned char)c);
			start = i;
			s->depth = 1;
			continue;
		}
		if (s->len + (i - start) + 1 > s->max)
			return gerr_set(err, EMSGSIZE, "watch event %llu is larger than %zu bytes", s->events + 1,
					s->max);
		if (s->in_string) {
			if (s->escaped)
				s->escaped = false;
			else if (c == '\\')
				s->escaped = true;
			else if (c == '"')
				s->in_string = false;
			continue;
		}
		if (c == '"')
			s->in_string = true;
		else if (c == '{' || c == '[')
			s->depth++;
		else if ((c == '}' || c == ']') && --s->depth == 0) {
			if (s->len) { /* the event began in an earlier piece */
				r = append(s, data + start, i + 1 - start);
				if (r >= 0)
					r = decode(s, s->buf, s->len, fn, userdata, err);
				s->len = 0;
			} else
				r = decode(s, data + start, i + 1 - start, fn, userdata, err);
			if (r < 0)
				return r;
		}
	}
	return s->depth ? append(s, data + start, len - start) : 0;
}
