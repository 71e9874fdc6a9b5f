/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: a node's kernel log as the doctor reads it (src/doctor/klog.h): line splitting, the
 * message part of syslog / dmesg / kmsg lines, pattern search and the NVRM API-mismatch report. */
#include "doctor/klog.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	char client[64], line[512];
	const char *pos, *l;
	size_t len, mlen;

	if (!text)
		return 0;
	for (pos = text; klog_next_line(&pos, &l, &len);)
		(void)klog_message(l, len, &mlen);
	(void)klog_find(text, "RmInitAdapter failed", NULL, line, sizeof(line));
	(void)klog_find(text, "BAR 1: no space for", "0000:07:00.0", line, sizeof(line));
	(void)klog_api_mismatch(text, client, sizeof(client), line, sizeof(line));
	free(text);
	return 0;
}
