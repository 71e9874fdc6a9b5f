/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nvml/xid.h"
#include "util/enumtab.h"

/*
 * One row per XID. Source of every row: docs/reference/monitoring-doctor.md A7, which summarizes NVIDIA's
 * XID catalog (docs.nvidia.com/deploy/xid-errors, "Resolution Bucket" column -> severity) and the
 * older docs' cause columns (-> app_error). Names are the catalog mnemonics without the
 * ROBUST_CHANNEL_ prefix; where the catalog groups codes (144-150, 155-158, 167-172) the name is
 * our short form of the group's text.
 */
static const struct xid_info xid_table[] = {
    {8, "FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", XID_SEV_APP, true},
    {13, "GR_EXCEPTION", "Graphics Engine Exception (out-of-range access, illegal instruction)", XID_SEV_APP, true},
    {31, "FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault (illegal address)", XID_SEV_APP, true},
    {32, "PBDMA_ERROR", "corrupted push buffer stream", XID_SEV_APP, true},
    {38, "FECS_WATCHDOG_TIMEOUT", "driver firmware error", XID_SEV_INFO, false},
    {43, "RESETCHANNEL_VERIF_ERROR", "GPU stopped processing (application fault)", XID_SEV_APP, true},
    {45, "PREEMPTIVE_REMOVAL", "preemptive cleanup after a previous error or a kill", XID_SEV_INFO, true},
    {46, "GPU_TIMEOUT_ERROR", "GPU timeout", XID_SEV_RESET, false},
    {48, "GPU_ECC_DBE", "double-bit ECC error", XID_SEV_RESET, false},
    {54, "AUX_POWER_NOT_CONNECTED", "auxiliary power is not connected", XID_SEV_HARDWARE, false},
    {61, "PMU_BREAKPOINT", "internal micro-controller breakpoint/warning", XID_SEV_RESET, false},
    {62, "PMU_HALT_ERROR", "internal micro-controller halt", XID_SEV_RESET, false},
    {63, "INFOROM_DRAM_RETIREMENT_EVENT", "page retirement or row remap recorded (reset to apply)", XID_SEV_INFO,
     false},
    {64, "INFOROM_DRAM_RETIREMENT_FAILURE", "page retirement or row remap recording failed", XID_SEV_RESET, false},
    {68, "NVDEC0_EXCEPTION", "video processor exception", XID_SEV_APP, true},
    {69, "GR_CLASS_ERROR", "graphics engine class error", XID_SEV_APP, true},
    {74, "NVLINK_ERROR", "NVLink error", XID_SEV_RESET, false},
    {79, "GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus (PCIe link lost); reboot the node", XID_SEV_REBOOT,
     false},
    {92, "EXCESSIVE_SBE_INTERRUPTS", "high single-bit ECC error rate", XID_SEV_INFO, false},
    {94, "CONTAINED_ERROR", "contained memory error (only the affected application dies)", XID_SEV_APP, false},
    {95, "UNCONTAINED_ERROR", "uncontained memory error", XID_SEV_RESET, false},
    {109, "CTXSW_TIMEOUT_ERROR", "context switch timeout", XID_SEV_RESET, true},
    {119, "GSP_RPC_TIMEOUT", "GSP firmware RPC timeout", XID_SEV_RESET, false},
    {120, "GSP_ERROR", "GSP firmware error", XID_SEV_RESET, false},
    {121, "C2C_ERROR", "chip-to-chip (Grace-Hopper) link error", XID_SEV_INFO, false},
    {136, "ALI_TRAINING_FAIL", "NVLink training failed", XID_SEV_RESET, false},
    {140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "unrecoverable ECC error escaped", XID_SEV_RESET, false},
    {143, "GPU_INIT_ERROR", "GPU initialization error", XID_SEV_RESET, false},
    {144, "NVLINK_SAW_ERROR", "NVLink5 SAW error", XID_SEV_RESET, false},
    {145, "NVLINK_RLW_ERROR", "NVLink5 RLW error", XID_SEV_RESET, false},
    {146, "NVLINK_TLW_ERROR", "NVLink5 TLW error", XID_SEV_RESET, false},
    {147, "NVLINK_TREX_ERROR", "NVLink5 TREX error", XID_SEV_RESET, false},
    {148, "NVLINK_NVLPW_ERROR", "NVLink5 NVLPW error", XID_SEV_RESET, false},
    {149, "NVLINK_NETIR_ERROR", "NVLink5 NETIR error", XID_SEV_RESET, false},
    {150, "NVLINK_MSE_ERROR", "NVLink5 MSE error", XID_SEV_RESET, false},
    {154, "GPU_RECOVERY_ACTION_CHANGED", "the recovery action required by another XID changed", XID_SEV_INFO, false},
    {155, "NVLINK_SW_ERROR", "NVLink software error", XID_SEV_RESET, false},
    {156, "RESOURCE_RETIREMENT_EVENT", "resource retirement event", XID_SEV_RESET, false},
    {157, "RESOURCE_RETIREMENT_FAILURE", "resource retirement failure", XID_SEV_RESET, false},
    {158, "GPU_FATAL_TIMEOUT", "GPU fatal timeout", XID_SEV_RESET, false},
    {167, "PCIE_FATAL_TIMEOUT", "PCIe fatal timeout", XID_SEV_HARDWARE, false},
    {168, "REDUCED_MEMORY_CAPACITY", "reduced memory capacity (WPR)", XID_SEV_HARDWARE, false},
    {169, "SEC2_HALT", "SEC2 micro-controller halt", XID_SEV_RESET, false},
    {171, "UNCORRECTABLE_DRAM_ERROR", "uncorrectable DRAM error (refines 48)", XID_SEV_RESET, false},
    {172, "UNCORRECTABLE_SRAM_ERROR", "uncorrectable SRAM error (refines 48)", XID_SEV_RESET, false},
};

/* internal/rm/health.go "Application errors: the GPU should still be healthy" (device-plugin.md §4). */
const unsigned xid_default_ignored[] = {13, 31, 43, 45, 68, 109};
const unsigned xid_n_default_ignored = ELEMENTSOF(xid_default_ignored);

const struct xid_info *xid_lookup(unsigned code)
{
	for (size_t i = 0; i < ELEMENTSOF(xid_table); i++)
		if (xid_table[i].code == code)
			return &xid_table[i];
	return NULL;
}

static const struct enum_name xid_severity_names[] = {
    {XID_SEV_INFO, "info"},     {XID_SEV_APP, "app"},           {XID_SEV_RESET, "reset"},
    {XID_SEV_REBOOT, "reboot"}, {XID_SEV_HARDWARE, "hardware"},
};

const char *xid_severity_name(enum xid_severity s)
{
	return enum_to_name(xid_severity_names, s, "unknown");
}

enum xid_recovery xid_recovery(unsigned code)
{
	const struct xid_info *x = xid_lookup(code);

	if (x && x->severity == XID_SEV_APP)
		return XID_RECOVER_QUIET;
	if (x && (x->severity == XID_SEV_REBOOT || x->severity == XID_SEV_HARDWARE))
		return XID_RECOVER_NEVER;
	return XID_RECOVER_CLEAN; /* reset class, info class and codes not in the table */
}

static void policy_set(struct xid_policy *p, unsigned code, bool ignored)
{
	if (code >= XID_POLICY_MAX)
		return;
	if (ignored)
		p->ignored[code / 8] |= (uint8_t)(1u << (code % 8));
	else
		p->ignored[code / 8] &= (uint8_t) ~(1u << (code % 8));
}

void xid_policy_default(struct xid_policy *p)
{
	memset(p, 0, sizeof(*p));
	for (unsigned i = 0; i < xid_n_default_ignored; i++)
		policy_set(p, xid_default_ignored[i], true);
}

bool xid_policy_is_critical(const struct xid_policy *p, unsigned xid)
{
	if (p->disabled)
		return false;
	if (xid >= XID_POLICY_MAX)
		return true;
	return !(p->ignored[xid / 8] & (1u << (xid % 8)));
}

/* Note one ignored entry in err (the first few, then a count), as upstream logs and skips it. */
static void note_ignored(const char *var, const char *tok, size_t len, unsigned n, struct gerr *err)
{
	size_t used;

	if (!err)
		return;
	if (n == 1)
		err->msg[0] = '\0';
	used = strlen(err->msg);
	if (n <= 4)
		snprintf(err->msg + used, sizeof(err->msg) - used, "%s%s: ignoring '%.*s' (not an XID number)",
			 n > 1 ? "; " : "", var, (int)MIN(len, 40), tok);
	else if (n == 5)
		snprintf(err->msg + used, sizeof(err->msg) - used, "; and more");
}

/*
 * Walk one comma list as upstream's newHealthCheckXIDs does (internal/rm/health.go): entries are
 * trimmed and case-folded, "all" and "xids" set keyword_all, numbers go to policy_set(p, code,
 * ignored); anything else is skipped and counted in *n_bad (described in err).
 */
static void policy_list(const char *var, const char *list, bool ignored, struct xid_policy *p, bool *keyword_all,
			unsigned *n_bad, struct gerr *err)
{
	const char *s = list;

	*keyword_all = false;
	while (s && *s) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		char tok[32];

		while (len && isspace((unsigned char)*s))
			s++, len--;
		while (len && isspace((unsigned char)s[len - 1]))
			len--;
		if (len >= sizeof(tok)) {
			note_ignored(var, s, len, ++*n_bad, err);
		} else if (len > 0) {
			memcpy(tok, s, len);
			tok[len] = '\0';
			if (strcasecmp(tok, "all") == 0 || strcasecmp(tok, "xids") == 0) {
				*keyword_all = true;
			} else {
				char *e;
				errno = 0;
				unsigned long long v = strtoull(tok, &e, 10);
				if (errno || *e || !isdigit((unsigned char)tok[0]))
					note_ignored(var, tok, len, ++*n_bad, err);
				else if (v < XID_POLICY_MAX)
					policy_set(p, (unsigned)v, ignored);
			}
		}
		s = end ? end + 1 : NULL;
	}
}

int xid_policy_parse(const char *disable, const char *enable, struct xid_policy *ret, struct gerr *err)
{
	struct xid_policy p;
	unsigned n_bad = 0;
	bool all;

	xid_policy_default(&p);
	policy_list("DP_DISABLE_HEALTHCHECKS", disable, true, &p, &all, &n_bad, err);
	if (all) {
		p.disabled = true;
		*ret = p;
		return (int)n_bad;
	}
	policy_list("DP_ENABLE_HEALTHCHECKS", enable, false, &p, &all, &n_bad, err);
	if (all)
		memset(p.ignored, 0, sizeof(p.ignored));
	*ret = p;
	return (int)n_bad;
}

static int hexval(const char *s, size_t len, unsigned *ret)
{
	unsigned v = 0;

	if (len == 0 || len > 8)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!isxdigit((unsigned char)s[i]))
			return -EINVAL;
		v = v * 16 +
		    (unsigned)(isdigit((unsigned char)s[i]) ? s[i] - '0' : tolower((unsigned char)s[i]) - 'a' + 10);
	}
	*ret = v;
	return 0;
}

int pci_addr_parse(const char *s, struct pci_addr *ret)
{
	struct pci_addr a = {.function = -1};
	const char *parts[3];
	size_t lens[3], n = 0;
	const char *dot;
	size_t total;

	if (strncasecmp(s, "PCI:", 4) == 0)
		s += 4;
	total = strlen(s);
	dot = memchr(s, '.', total);
	if (dot) {
		if (dot[1] < '0' || dot[1] > '7' || dot[2] != '\0')
			return -EINVAL;
		a.function = dot[1] - '0';
		total = (size_t)(dot - s);
	}
	/* split on ':' into domain:bus:device or bus:device */
	for (const char *p = s, *end = s + total; p <= end && n < 3;) {
		const char *c = memchr(p, ':', (size_t)(end - p));
		const char *stop = c ? c : end;
		parts[n] = p;
		lens[n++] = (size_t)(stop - p);
		if (!c)
			break;
		p = c + 1;
		if (p > end)
			break;
	}
	if (n < 2 || (n == 3 && memchr(parts[2], ':', (size_t)(s + total - parts[2]))))
		return -EINVAL;
	unsigned v[3];
	for (size_t i = 0; i < n; i++)
		if (hexval(parts[i], lens[i], &v[i]) < 0)
			return -EINVAL;
	if (n == 3) {
		a.domain = v[0], a.bus = v[1], a.device = v[2];
	} else {
		a.domain = 0, a.bus = v[0], a.device = v[1];
	}
	if (a.bus > 0xff || a.device > 0x1f)
		return -EINVAL;
	*ret = a;
	return 0;
}

bool pci_addr_equal(const struct pci_addr *a, const struct pci_addr *b)
{
	if (a->domain != b->domain || a->bus != b->bus || a->device != b->device)
		return false;
	return a->function < 0 || b->function < 0 || a->function == b->function;
}

static void copy_trimmed(char *dst, size_t size, const char *s)
{
	size_t len;

	while (*s == ' ' || *s == '\t' || *s == ',')
		s++;
	len = strlen(s);
	while (len && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' '))
		len--;
	len = MIN(len, size - 1);
	memcpy(dst, s, len);
	dst[len] = '\0';
}

/* Read an address token ending at one of `stops`; fills text and parsed address. */
static const char *take_addr(const char *s, const char *stops, char *text, size_t size, struct pci_addr *a)
{
	size_t len = strcspn(s, stops);

	if (len == 0 || len >= size)
		return NULL;
	memcpy(text, s, len);
	text[len] = '\0';
	if (pci_addr_parse(text, a) < 0)
		return NULL;
	return s + len;
}

/* "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., text" */
static int parse_xid_form(const char *m, struct xid_kmsg *x)
{
	const char *p;
	char *e;

	if (strncmp(m, "Xid (", 5) != 0)
		return 0;
	p = take_addr(m + 5, ")", x->pci_text, sizeof(x->pci_text), &x->pci);
	if (!p || strncmp(p, "):", 2) != 0)
		return 0;
	p += 2;
	while (*p == ' ')
		p++;
	if (!isdigit((unsigned char)*p))
		return 0;
	errno = 0;
	unsigned long v = strtoul(p, &e, 10);
	if (errno || v > 100000)
		return 0;
	x->xid = (unsigned)v;
	copy_trimmed(x->text, sizeof(x->text), e);
	return 1;
}

#define FALLEN_OFF "fallen off the bus"

int xid_kmsg_parse_line(struct xid_kmsg_parser *p, const char *line, struct xid_kmsg *ret)
{
	struct xid_kmsg x = {0};
	const char *m = strstr(line, "NVRM: ");
	const char *q;

	if (!m) {
		if (p->pending_lines > 0)
			p->pending_lines--;
		return 0;
	}
	m += 6;
	if (parse_xid_form(m, &x)) {
		*ret = x;
		return 1;
	}
	/* "NVRM: GPU 0000:18:00.0: GPU has fallen off the bus." (one line, newer drivers) */
	if (strncmp(m, "GPU ", 4) == 0 && strstr(m, FALLEN_OFF) && (q = strstr(m + 4, ": ")) &&
	    (size_t)(q - (m + 4)) < sizeof(x.pci_text)) {
		memcpy(x.pci_text, m + 4, (size_t)(q - (m + 4)));
		x.pci_text[q - (m + 4)] = '\0';
		if (pci_addr_parse(x.pci_text, &x.pci) < 0)
			return 0;
		x.xid = 79;
		copy_trimmed(x.text, sizeof(x.text), q + 1);
		*ret = x;
		return 1;
	}
	/* "NVRM: The NVIDIA GPU 0000:b3:00.0" ... "NVRM: fallen off the bus and is not responding" */
	if (strncmp(m, "The NVIDIA GPU ", 15) == 0 &&
	    take_addr(m + 15, " \n", p->pending_text, sizeof(p->pending_text), &p->pending)) {
		p->pending_lines = 4;
		if (!strstr(m, FALLEN_OFF))
			return 0;
	}
	if (p->pending_lines > 0 && strstr(m, FALLEN_OFF)) {
		x.pci = p->pending;
		memcpy(x.pci_text, p->pending_text, sizeof(x.pci_text));
		x.xid = 79;
		copy_trimmed(x.text, sizeof(x.text), "GPU has fallen off the bus and is not responding to commands");
		p->pending_lines = 0;
		*ret = x;
		return 1;
	}
	if (p->pending_lines > 0)
		p->pending_lines--;
	return 0;
}
