/* SPDX-License-Identifier: Apache-2.0 */
/*
 * XID errors: what each code means, which ones make a GPU unhealthy (the device plugin's policy with
 * DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS), and the kernel-log lines that carry them
 * ("NVRM: Xid (PCI:0000:3b:00): 79, ..."). Facts: docs/reference/monitoring-doctor.md A7,
 * docs/reference/device-plugin.md §4.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

/* What the catalog says to do first (its "Immediate" resolution bucket, simplified). */
enum xid_severity {
	XID_SEV_INFO,     /* informational / ignore: nothing to do now */
	XID_SEV_APP,      /* restart the application; the GPU itself is fine */
	XID_SEV_RESET,    /* reset the GPU (or contact support); drain the GPU until then */
	XID_SEV_REBOOT,   /* the GPU is gone (e.g. fell off the bus): reboot the node, cannot recover alone */
	XID_SEV_HARDWARE, /* check mechanicals / power, hardware service */
};

struct xid_info {
	unsigned code;
	const char *name;        /* catalog mnemonic, e.g. "GPU_HAS_FALLEN_OFF_THE_BUS" */
	const char *description; /* one line for humans */
	enum xid_severity severity;
	bool app_error; /* caused by the application, not the GPU (13, 31, 43, ...) */
};

/* The table entry for code, or NULL when the code is not in our table. */
const struct xid_info *xid_lookup(unsigned code);
/* "app", "info", "reset", "reboot", "hardware". */
const char *xid_severity_name(enum xid_severity s);
/*
 * When a GPU made unhealthy by this XID may be healthy again (docs/reference/device-plugin.md
 * §4.1):
 *   QUIET  application errors: after a quiet period in which NVML answers normally;
 *   CLEAN  reset class, informational and unknown codes: only when NVML itself says the GPU was
 *          reset (recovery action NONE, nothing pending); never on silence alone;
 *   NEVER  the GPU is gone (79) or needs hardware service: never while the process runs.
 */
enum xid_recovery {
	XID_RECOVER_QUIET,
	XID_RECOVER_CLEAN,
	XID_RECOVER_NEVER,
};
enum xid_recovery xid_recovery(unsigned code);

/* XIDs that upstream never marks unhealthy: application errors. */
extern const unsigned xid_default_ignored[];
extern const unsigned xid_n_default_ignored;

#define XID_POLICY_MAX 1024 /* codes >= this are never in the ignore set */

/*
 * The health policy for XIDs, from DP_DISABLE_HEALTHCHECKS and DP_ENABLE_HEALTHCHECKS:
 * - DISABLE "all" or "xids" (anywhere in its list): no XID-based health checks at all (disabled).
 * - DISABLE comma list of codes: added to the default ignore set {13,31,43,45,68,109}.
 * - ENABLE comma list of codes: removed from the ignore set (even defaults); "all": nothing ignored.
 * DISABLE=all wins over any ENABLE (upstream returns before reading the enable list).
 */
struct xid_policy {
	bool disabled; /* health checks off */
	uint8_t ignored[XID_POLICY_MAX / 8];
};

/*
 * Parse the two variables (each may be NULL or ""). As upstream, an entry that is neither a number
 * nor "all"/"xids" is skipped: the return value is how many were (0: all good), and err then says
 * which, for the caller to log as a warning. Never fails.
 */
int xid_policy_parse(const char *disable, const char *enable, struct xid_policy *ret, struct gerr *err);
/* The default policy (no variables set). */
void xid_policy_default(struct xid_policy *p);
/* True when this XID makes the GPU unhealthy under the policy. */
bool xid_policy_is_critical(const struct xid_policy *p, unsigned xid);

/* A PCI address as the kernel and NVML print it; function -1 when the text had none. */
struct pci_addr {
	unsigned domain, bus, device;
	int function;
};

/*
 * Parse "PCI:0000:3b:00", "0000:3b:00", "00000000:3B:00.0", "0000:b3:00.0", "3b:00.0".
 * Returns 0 or -EINVAL.
 */
int pci_addr_parse(const char *s, struct pci_addr *ret);
/* Same domain/bus/device; functions compared only when both are known. */
bool pci_addr_equal(const struct pci_addr *a, const struct pci_addr *b);

/* One XID found in the kernel log. */
struct xid_kmsg {
	struct pci_addr pci;
	char pci_text[32]; /* as printed in the log, e.g. "PCI:0000:3b:00" */
	unsigned xid;      /* 79 for the "fallen off the bus" forms that carry no Xid number */
	char text[256];    /* the rest of the line after the XID number, trimmed */
};

/*
 * Line-by-line parser. The kernel splits some reports over several lines ("The NVIDIA GPU
 * 0000:b3:00.0 ... has" / "fallen off the bus"), so the parser keeps a little state between lines.
 * Accepts the prefixes of /dev/kmsg ("6,1234,5678,-;"), syslog/kern.log ("Dec  2 13:58:45 host
 * kernel: [ 12.345] "), journalctl and dmesg: everything before "NVRM:" is ignored.
 */
struct xid_kmsg_parser {
	struct pci_addr pending;
	char pending_text[32];
	int pending_lines; /* > 0 while a "The NVIDIA GPU <addr>" line waits for its "fallen off" line */
};

/* Returns 1 and fills *ret when the line completes an XID report, 0 when it does not. */
int xid_kmsg_parse_line(struct xid_kmsg_parser *p, const char *line, struct xid_kmsg *ret);
