/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: what the API server sends the Kubernetes client (src/kapi/wire.h): the watch event
 * stream, fed in two pieces cut where the first byte says (framing across pieces, the event bound),
 * each event's object read as a Status and turned into error words; and the whole input as the body
 * of an error answer (Status or not).
 */
#include "fuzz.h"
#include "kapi/wire.h"

static int on_event(enum kapi_event_type type, json_t *obj, void *userdata)
{
	const struct kapi_what w = {.verb = "watch", .res = &kapi_resourceslices};
	struct kapi_status st;
	struct gerr err = {0};

	(void)kapi_status_decode(obj, &st);
	if (type == KAPI_EVENT_ERROR)
		(void)kapi_status_error(&w, obj, &err);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct kapi_what w = {.verb = "patch", .res = &kapi_nodes, .name = "n", .subresource = "status"};
	struct kapi_stream s;
	struct gerr err = {0};
	char *text;
	size_t cut;

	if (!size)
		return 0;
	text = fuzz_cstr(data + 1, size - 1);
	if (!text)
		return 0;
	cut = (size - 1) * data[0] / 256;
	kapi_stream_init(&s, 1024 + data[0] * 16);
	if (kapi_stream_feed(&s, text, cut, on_event, NULL, &err) >= 0)
		(void)kapi_stream_feed(&s, text + cut, size - 1 - cut, on_event, NULL, &err);
	kapi_stream_done(&s);
	(void)kapi_http_error(&w, 400 + data[0], text, size - 1, &err);
	free(text);
	return 0;
}
