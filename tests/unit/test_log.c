/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log_emit() (src/util/log.c) writes logfmt as go-logfmt writes and reads it (docs/reference/logging.md):
 * keys bare; a value bare unless it holds a space, '=', '"' or a control byte, else quoted with \" \\
 * \n \r \t \u00XX; a value the format quotes stays quoted. Each line is decoded again here by the
 * grammar go-logfmt's decoder follows, and must give back the values that were logged; with
 * GPULET_LOGFMT_SAMPLES set the round-trip lines are written there for go-logfmt's own decoder
 * (test util_log_golang).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/log.h"

/* Runs the statement with stderr sent to a memfd and returns what it wrote (one line, no '\n'). */
#define CAPTURE(buf, stmt)                                         \
	do {                                                       \
		int fd_ = memfd_create("log", 0), saved_ = dup(2); \
		assert_true(fd_ >= 0 && saved_ >= 0);              \
		fflush(stderr);                                    \
		dup2(fd_, 2);                                      \
		stmt;                                              \
		fflush(stderr);                                    \
		dup2(saved_, 2);                                   \
		close(saved_);                                     \
		ssize_t n_ = pread(fd_, buf, sizeof(buf) - 1, 0);  \
		close(fd_);                                        \
		assert_true(n_ > 0 && buf[n_ - 1] == '\n');        \
		buf[n_ - 1] = '\0';                                \
	} while (0)

/* The line after "time=… " (the time changes). */
static const char *after_time(const char *line)
{
	assert_int_equal(strncmp(line, "time=", 5), 0);
	const char *sp = strchr(line, ' ');
	assert_non_null(sp);
	return sp + 1;
}

struct pair {
	char key[64];
	char val[1024];
};

/*
 * go-logfmt's decoder (decode.go): a key is a run of bytes > ' ' other than '=' and '"'; after '='
 * a value is either a run of bytes > ' ' other than '=' and '"', or a quoted string with the JSON
 * escapes (\" \\ \/ \b \f \n \r \t \uXXXX, here only below 0x80). Pairs are separated by spaces.
 */
static size_t decode(const char *s, struct pair *p, size_t max)
{
	size_t n = 0;

	while (*s) {
		while (*s == ' ')
			s++;
		if (!*s)
			break;
		assert_true(n < max);
		size_t k = 0, v = 0;
		while (*s > ' ' && *s != '=' && *s != '"')
			p[n].key[k++] = *s++;
		p[n].key[k] = '\0';
		assert_true(k > 0);
		assert_int_equal(*s++, '=');
		if (*s == '"') {
			for (s++; *s != '"'; s++) {
				assert_true(*s && (unsigned char)*s >= 0x20); /* no raw control byte inside quotes */
				if (*s != '\\') {
					p[n].val[v++] = *s;
					continue;
				}
				s++;
				const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *e = strchr(from, *s);
				if (*s == 'u') {
					char hex[5] = {s[1], s[2], s[3], s[4], '\0'};
					long c = strtol(hex, NULL, 16);
					assert_true(c > 0 && c < 0x80);
					p[n].val[v++] = (char)c;
					s += 4;
				} else {
					assert_true(*s && e);
					p[n].val[v++] = to[e - from];
				}
			}
			s++;
		} else {
			while (*s > ' ' && *s != '=' && *s != '"')
				p[n].val[v++] = *s++;
		}
		p[n].val[v] = '\0';
		assert_true(*s == ' ' || *s == '\0');
		n++;
	}
	return n;
}

static void test_bare_and_quoted(void **state)
{
	char out[4096];

	log_set_level(LOG_LVL_DEBUG);
	CAPTURE(out, log_info("Registered device plugin", "resource=%s socket=%s devices=%zu", "nvidia.com/gpu",
			      "/var/lib/kubelet/device-plugins/gpulet-nvidia-gpu.sock", (size_t)8));
	assert_string_equal(after_time(out), "level=info msg=\"Registered device plugin\" resource=nvidia.com/gpu "
					     "socket=/var/lib/kubelet/device-plugins/gpulet-nvidia-gpu.sock devices=8");
	/* a value the format quotes stays quoted; what it holds is escaped */
	CAPTURE(out, log_warn("Config warnings", "path=%s error=\"%s\"", "/etc/a b", "cannot open \"x\": C:\\y"));
	assert_string_equal(
	    after_time(out),
	    "level=warn msg=\"Config warnings\" path=\"/etc/a b\" error=\"cannot open \\\"x\\\": C:\\\\y\"");
	/* a bare value that turns out to hold a space is quoted whole */
	CAPTURE(out, log_info("Serving device plugin", "resource=%s devices=%zu%s", "nvidia.com/gpu", (size_t)0,
			      " (empty until the MPS control daemon is ready)"));
	assert_string_equal(after_time(out), "level=info msg=\"Serving device plugin\" resource=nvidia.com/gpu "
					     "devices=\"0 (empty until the MPS control daemon is ready)\"");
	CAPTURE(out, log_error("a \"quoted\" msg\n", "v=%s e=%s u=%u i=%d ll=%lld f=%.1f pct=%d%%", "a=b\tc\r\x01\x7f",
			       "", 4000000000u, -3, -9000000000LL, 2.25, 5));
	assert_string_equal(after_time(out),
			    "level=error msg=\"a \\\"quoted\\\" msg\\n\" v=\"a=b\\tc\\r\\u0001\\u007f\" "
			    "e= u=4000000000 i=-3 ll=-9000000000 f=2.2 pct=5%");
	CAPTURE(out, log_info("no pairs", NULL));
	assert_string_equal(after_time(out), "level=info msg=\"no pairs\"");
	log_set_level(LOG_LVL_INFO);
}

/* Whatever a value holds, a logfmt reader gets it back unchanged under its key. */
static void test_round_trip(void **state)
{
	static const char *values[] = {
	    "plain",
	    "",
	    "two words",
	    "k=v",
	    "\"",
	    "\\",
	    "end\\",
	    "a\"b\\\"c",
	    "line1\nline2\r\n",
	    "\ttab",
	    "\x01\x02\x1f",
	    "GPU-8c5e2d8a-1111-2222-3333-444455556666",
	    "=",
	    "utf8 \xc3\xa9",
	    "null",
	};
	char out[8192];
	struct pair p[8];
	/* for the check with go-logfmt itself (tests/integration/test_logfmt_go.py): each line, then the value in hex
	 */
	const char *samples = getenv("GPULET_LOGFMT_SAMPLES");
	FILE *sf = samples ? fopen(samples, "w") : NULL;

	assert_true(!samples || sf);
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		CAPTURE(out, log_warn("round trip", "uuid=%s index=%u bare=%s quoted=\"%s\" mixed=%s/%s", "GPU-1", 3u,
				      values[i], values[i], values[i], values[i]));
		if (sf) {
			fprintf(sf, "L %s\nW ", out);
			for (const char *c = values[i]; *c; c++)
				fprintf(sf, "%02x", (unsigned char)*c);
			fputc('\n', sf);
		}
		size_t n = decode(after_time(out), p, 8);
		char mixed[2100];
		snprintf(mixed, sizeof(mixed), "%s/%s", values[i], values[i]);
		assert_int_equal(n, 7);
		assert_string_equal(p[0].key, "level");
		assert_string_equal(p[1].key, "msg");
		assert_string_equal(p[1].val, "round trip");
		assert_string_equal(p[2].val, "GPU-1");
		assert_string_equal(p[3].val, "3");
		assert_string_equal(p[4].key, "bare");
		assert_string_equal(p[4].val, values[i]);
		assert_string_equal(p[5].key, "quoted");
		assert_string_equal(p[5].val, values[i]);
		assert_string_equal(p[6].key, "mixed");
		assert_string_equal(p[6].val, mixed);
	}
	if (sf)
		fclose(sf);
}

/* A value longer than the line is cut; the line stays one line and ends with '\n'. */
static void test_long_value(void **state)
{
	static char big[40000], out[40000];

	memset(big, '"', sizeof(big) - 1);
	CAPTURE(out, log_warn("long", "v=%s", big));
	assert_null(strchr(out, '\n'));
	assert_true(strlen(out) < 16384);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bare_and_quoted),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_long_value),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
