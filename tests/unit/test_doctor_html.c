/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's page (doctor/html.h): every finding text escaped, the links' colours, the root cause,
 * nothing that loads or runs anything. The picture itself is judged by Chromium (test_doctor_html.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "doctor/html.h"

/* What a hostile node can put into findings: file names, pod names, tool output. */
static const char evil[] = "</title><script>alert(1)</script>\"><img src=x onerror=alert(2)>'&\x01\x1b[31m";

static char *render(const struct doctor_ctx *c, const char *node, char *const *only, size_t n_only)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	doctor_render_html(c, &(struct doctor_html_page){.node = node, .when = evil}, only, n_only, f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The node of test_escaped: runtime fails (root cause), MIG warns, driver ok, the rest not checked. */
static void broken_node(struct doctor_ctx *c)
{
	struct doctor_finding *f;

	doctor_report(c, "driver.ok", DOCTOR_OK, LINK_DRIVER, "", "driver %s", evil);
	f = doctor_report(c, "runtime.cdi-disabled", DOCTOR_FAIL, LINK_RUNTIME, evil, "CDI off in %s", evil);
	doctor_evidence(f, "%s", evil);
	f->run = strdup(evil);
	doctor_report(c, "mig.without-cdi", DOCTOR_WARN, LINK_MIG, "turn CDI on", "MIG without CDI");
	doctor_report(c, "plugin.not-registered", DOCTOR_FAIL, LINK_PLUGIN, "start it", "no plugin");
	c->skipped = json_pack("[{s:s, s:s, s:s}]", "check", "alloc", "ids", evil, "reason", evil);
}

static void test_escaped(void **state)
{
	struct host_paths hp = {.root = "/", .driver_root = "/"};
	struct doctor_options o = {.host = &hp};
	struct doctor_ctx c = {.o = &o};
	char *page;

	(void)state;
	broken_node(&c);
	page = render(&c, evil, NULL, 0);
	/* no markup but ours: no script, no image, no second title, nothing fetched */
	assert_null(strstr(page, "<script"));
	assert_null(strstr(page, "<img"));
	assert_int_equal(count(page, "</title>"), 1);
	assert_null(strstr(page, "href="));
	assert_non_null(strstr(page, "default-src 'none'"));
	/* the text is there, escaped, in each place it appears, controls replaced */
	assert_int_equal(
	    count(page, "&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x "
			"onerror=alert(2)&gt;&#39;&amp;&#xfffd;&#xfffd;[31m"),
	    /* title, heading, when, the ok summary, the failure's summary x2, evidence, fix x2 and run, skipped x2 */
	    12);
	assert_null(strchr(page, '\x01'));
	assert_null(strchr(page, '\x1b'));
	free(page);
	doctor_ctx_done(&c);
}

/* The state each link is drawn in, and the root cause: the first failure in chain order. */
static void test_links(void **state)
{
	struct host_paths hp = {.root = "/", .driver_root = "/"};
	struct doctor_options o = {.host = &hp};
	struct doctor_ctx c = {.o = &o};
	char *only[] = {"mig"};
	char *page;

	(void)state;
	broken_node(&c);
	page = render(&c, "node-a", NULL, 0);
	assert_int_equal(count(page, "<rect class=\"link\""), LINK_VERSIONS + 1);
	assert_non_null(strstr(page, "data-link=\"driver\" data-state=\"ok\""));
	assert_non_null(strstr(page, "data-link=\"runtime\" data-state=\"fail\""));
	assert_non_null(strstr(page, "data-link=\"mig\" data-state=\"warn\""));
	assert_non_null(strstr(page, "data-link=\"plugin\" data-state=\"fail\""));
	assert_non_null(strstr(page, "data-link=\"cdi\" data-state=\"unchecked\""));
	assert_non_null(strstr(page, "fill=\"#c62828\" stroke=\"#000000\"")); /* the root cause's box, outlined */
	assert_int_equal(count(page, "stroke=\"#000000\""), 1);
	assert_non_null(strstr(page, "<h2>Root cause: runtime.cdi-disabled (runtime link)</h2>"));
	assert_non_null(strstr(page, "2 fail, 1 warn, 1 ok"));
	free(page);

	/* --only mig: only MIG's warning is shown, nothing fails, no root cause */
	page = render(&c, "node-a", only, 1);
	assert_non_null(strstr(page, "data-link=\"runtime\" data-state=\"unchecked\""));
	assert_non_null(strstr(page, "data-link=\"mig\" data-state=\"warn\""));
	assert_non_null(strstr(page, "<h2>No failure</h2>"));
	assert_null(strstr(page, "stroke=\"#000000\""));
	free(page);
	doctor_ctx_done(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_escaped),
	    cmocka_unit_test(test_links),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
