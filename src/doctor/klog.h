/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's kernel log, read once for every check that looks for driver, PCI or fabric messages:
 * --kernel-log FILE, else the first of <root>/var/log/kern.log, messages, syslog (plus the boot ring
 * saved in /var/log/dmesg), else /dev/kmsg when the doctor looks at the host it runs on.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct doctor_ctx;

/* The text (NUL-terminated, read-only) and where it came from; -ENOENT none, -ENOMEM. */
int doctor_need_klog(struct doctor_ctx *c, const char **text, const char **src);

/* Each line of text in turn: *line and *len set, false at the end. *pos starts at text. */
bool klog_next_line(const char **pos, const char **line, size_t *len);

/* The message part of a kernel-log line: after "kernel: [ 12.3] " (syslog), "[ 12.3] " (dmesg) or
 * "6,123,456,-;" (/dev/kmsg); the line itself when it has none of those. */
const char *klog_message(const char *line, size_t len, size_t *mlen);

/* A log line containing needle (and, when also is given, also that); NULL none. buf gets the message. */
const char *klog_find(const char *text, const char *needle, const char *also, char *buf, size_t size);

/*
 * The driver's "NVRM: API mismatch" report (src/nvidia/arch/nvalloc/unix/src/osapi.c): "the client has the
 * version X, but / this kernel module has the version Y" (older drivers), or "the client 'nvidia-smi' (pid N)
 * / has the version X, but this kernel module has / the version Y". client gets X, the user-space driver's
 * version; line the first line of the report. false when the log has none.
 */
bool klog_api_mismatch(const char *text, char *client, size_t size, char *line, size_t lsize);
