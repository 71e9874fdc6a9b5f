/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "nvml/xid.h"

static void test_table(void **state)
{
	const struct xid_info *x = xid_lookup(79);
	assert_non_null(x);
	assert_string_equal(x->name, "GPU_HAS_FALLEN_OFF_THE_BUS");
	assert_int_equal(x->severity, XID_SEV_REBOOT);
	assert_false(x->app_error);
	assert_int_equal(xid_recovery(79), XID_RECOVER_NEVER);
	assert_int_equal(xid_recovery(54), XID_RECOVER_NEVER);
	/* issue 23 §3: what needs a reset never comes back on silence alone; unknown codes neither */
	static const unsigned reset[] = {48, 95, 119, 140, 63, 12345};
	for (size_t i = 0; i < sizeof(reset) / sizeof(reset[0]); i++)
		assert_int_equal(xid_recovery(reset[i]), XID_RECOVER_CLEAN);
	assert_int_equal(xid_recovery(94), XID_RECOVER_QUIET);
	assert_int_equal(xid_recovery(13), XID_RECOVER_QUIET);
	assert_true(xid_lookup(13)->app_error);
	assert_true(xid_lookup(31)->app_error);
	assert_null(xid_lookup(1));
	assert_string_equal(xid_severity_name(XID_SEV_RESET), "reset");
}

static void test_policy_default(void **state)
{
	struct xid_policy p;
	const unsigned ignored[] = {13, 31, 43, 45, 68, 109};

	xid_policy_default(&p);
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		assert_false(xid_policy_is_critical(&p, ignored[i]));
	assert_true(xid_policy_is_critical(&p, 48));
	assert_true(xid_policy_is_critical(&p, 79));
	assert_true(xid_policy_is_critical(&p, 94));
	assert_true(xid_policy_is_critical(&p, 999));
	assert_true(xid_policy_is_critical(&p, 5000)); /* beyond the bitmap: never ignored */
	/* both NULL/empty = default */
	struct xid_policy q;
	assert_int_equal(xid_policy_parse(NULL, "", &q, NULL), 0);
	assert_memory_equal(&p, &q, sizeof(p));
}

/* Rows: DISABLE, ENABLE, xid, critical? -- semantics of upstream internal/rm/health.go (§4). */
static const struct {
	const char *disable, *enable;
	unsigned xid;
	bool critical;
} policy_rows[] = {
    {"all", NULL, 79, false},     {"xids", NULL, 48, false},    {"all", "79", 79, false}, /* DISABLE=all wins */
    {"48", NULL, 48, false},      {"48,79", NULL, 79, false},   {" 48 , 63 ", NULL, 63, false},
    {"48", NULL, 79, true},       {NULL, "13", 13, true},       {NULL, "13", 31, false},
    {NULL, "all", 31, true},      {NULL, "ALL", 109, true},     {"48", "48", 48, true}, /* enable overrides */
    {"13,,31,", NULL, 31, false}, {"13,xids", NULL, 79, false},
};

static void test_policy_rows(void **state)
{
	for (size_t i = 0; i < sizeof(policy_rows) / sizeof(policy_rows[0]); i++) {
		struct xid_policy p;
		struct gerr err = {0};
		assert_int_equal(xid_policy_parse(policy_rows[i].disable, policy_rows[i].enable, &p, &err), 0);
		if (xid_policy_is_critical(&p, policy_rows[i].xid) != policy_rows[i].critical)
			fail_msg("row %zu: disable=%s enable=%s xid=%u expected critical=%d", i, policy_rows[i].disable,
				 policy_rows[i].enable, policy_rows[i].xid, policy_rows[i].critical);
	}
}

/* Issue 23 §4: as upstream, a malformed entry is skipped (and said), never a failure. */
static void test_policy_malformed(void **state)
{
	struct xid_policy p, q;
	struct gerr err = {0};

	assert_int_equal(xid_policy_parse("13,foo,48", NULL, &p, &err), 1);
	assert_non_null(strstr(err.msg, "DP_DISABLE_HEALTHCHECKS"));
	assert_non_null(strstr(err.msg, "'foo'"));
	assert_false(xid_policy_is_critical(&p, 48)); /* the good entries still count */
	assert_true(xid_policy_is_critical(&p, 79));
	assert_int_equal(xid_policy_parse(NULL, "xids", &q, &err), 0); /* upstream: "xids" in ENABLE = all */
	assert_true(xid_policy_is_critical(&q, 13));
	assert_int_equal(xid_policy_parse("-5", "12a", &p, &err), 2);
	assert_non_null(strstr(err.msg, "DP_ENABLE_HEALTHCHECKS"));
	xid_policy_default(&q);
	assert_memory_equal(&p, &q, sizeof(p));
	assert_int_equal(xid_policy_parse("a,b,c,d,e,f,0123456789012345678901234567890123456789", NULL, &p, &err), 7);
	assert_int_equal(xid_policy_parse("99999999999", NULL, &p, NULL), 0); /* a number, beyond the table */
}

static void test_pci(void **state)
{
	struct pci_addr a, b;

	assert_int_equal(pci_addr_parse("PCI:0000:3b:00", &a), 0);
	assert_int_equal(a.domain, 0);
	assert_int_equal(a.bus, 0x3b);
	assert_int_equal(a.device, 0);
	assert_int_equal(a.function, -1);
	assert_int_equal(pci_addr_parse("00000000:3B:00.0", &b), 0);
	assert_int_equal(b.function, 0);
	assert_true(pci_addr_equal(&a, &b));
	assert_int_equal(pci_addr_parse("0000:3b:01.0", &b), 0);
	assert_false(pci_addr_equal(&a, &b));
	assert_int_equal(pci_addr_parse("0018:01:00", &b), 0);
	assert_int_equal(b.domain, 0x18);
	assert_int_equal(pci_addr_parse("3b:00.1", &b), 0);
	assert_int_equal(b.function, 1);
	assert_int_equal(pci_addr_parse("zz:00", &b), -EINVAL);
	assert_int_equal(pci_addr_parse("", &b), -EINVAL);
	assert_int_equal(pci_addr_parse("0000:3b:00.9", &b), -EINVAL);
	assert_int_equal(pci_addr_parse("0000:3b:00:00:00", &b), -EINVAL);
	assert_int_equal(pci_addr_parse("0000:1ff:00.0", &b), -EINVAL);
}

/* Lines from reference A7 with the prefixes of each log source. */
static const struct {
	const char *line;
	const char *pci; /* NVML form of the GPU it names; NULL = no XID */
	unsigned xid;
	const char *text_has;
} kmsg_rows[] = {
    {"NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", "00000000:3B:00.0",
     79, "fallen off the bus"},
    {"6,1234,5678,-;NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping",
     "00000000:10:1C.0", 63, "Row Remapper"},
    {"Dec  2 13:58:45 node7 kernel: [ 1234.567890] NVRM: Xid (0000:03:00): 14, Channel 00000001", "00000000:03:00.0",
     14, "Channel 00000001"},
    {"kernel: NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 08", "00000018:01:00.0", 149, "NETIR"},
    {"<4>[  10.1] NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.", "00000000:18:00.0", 79, "fallen off"},
    {"4,99,100,-;NVRM: Xid (PCI:0000:07:00): 48, pid=77, DBE (0x1)\n", "00000000:07:00.0", 48, "DBE (0x1)"},
    {"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15", NULL, 0, NULL},
    {"6,1,2,-;usb 1-1: new high-speed USB device", NULL, 0, NULL},
    {"NVRM: Xid (garbage): 79, x", NULL, 0, NULL},
    {"NVRM: Xid (PCI:0000:3b:00): notanumber", NULL, 0, NULL},
    {"", NULL, 0, NULL},
};

static void test_kmsg_lines(void **state)
{
	for (size_t i = 0; i < sizeof(kmsg_rows) / sizeof(kmsg_rows[0]); i++) {
		struct xid_kmsg_parser p = {0};
		struct xid_kmsg x;
		int r = xid_kmsg_parse_line(&p, kmsg_rows[i].line, &x);
		if (!kmsg_rows[i].pci) {
			if (r != 0)
				fail_msg("row %zu: '%s' parsed as an XID", i, kmsg_rows[i].line);
			continue;
		}
		if (r != 1)
			fail_msg("row %zu: '%s' not parsed", i, kmsg_rows[i].line);
		struct pci_addr want;
		assert_int_equal(pci_addr_parse(kmsg_rows[i].pci, &want), 0);
		assert_true(pci_addr_equal(&x.pci, &want));
		assert_int_equal(x.xid, kmsg_rows[i].xid);
		if (!strstr(x.text, kmsg_rows[i].text_has))
			fail_msg("row %zu: text '%s' lacks '%s'", i, x.text, kmsg_rows[i].text_has);
		assert_null(strchr(x.text, '\n'));
	}
}

static void test_kmsg_multiline(void **state)
{
	struct xid_kmsg_parser p = {0};
	struct xid_kmsg x;
	struct pci_addr want;

	assert_int_equal(xid_kmsg_parse_line(&p, "6,10,1,-;NVRM: The NVIDIA GPU 0000:b3:00.0", &x), 0);
	assert_int_equal(xid_kmsg_parse_line(&p, "6,11,1,-;NVRM: (PCI ID: 10de:26b5) installed in this system has", &x),
			 0);
	assert_int_equal(
	    xid_kmsg_parse_line(&p, "6,12,1,-;NVRM: fallen off the bus and is not responding to commands.", &x), 1);
	assert_int_equal(x.xid, 79);
	assert_int_equal(pci_addr_parse("00000000:B3:00.0", &want), 0);
	assert_true(pci_addr_equal(&x.pci, &want));
	/* the state is consumed: another "fallen off" line alone names no GPU */
	assert_int_equal(xid_kmsg_parse_line(&p, "NVRM: fallen off the bus and is not responding to commands.", &x), 0);

	/* a stale header does not pair with a "fallen off" line many lines later */
	assert_int_equal(xid_kmsg_parse_line(&p, "NVRM: The NVIDIA GPU 0000:b3:00.0", &x), 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(xid_kmsg_parse_line(&p, "unrelated line", &x), 0);
	assert_int_equal(xid_kmsg_parse_line(&p, "NVRM: fallen off the bus", &x), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_policy_default),
	    cmocka_unit_test(test_policy_rows),
	    cmocka_unit_test(test_policy_malformed),
	    cmocka_unit_test(test_pci),
	    cmocka_unit_test(test_kmsg_lines),
	    cmocka_unit_test(test_kmsg_multiline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
