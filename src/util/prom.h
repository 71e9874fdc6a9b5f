/* SPDX-License-Identifier: Apache-2.0 */
/* The Prometheus text exposition format (0.0.4), shared by the exporter and the doctor's metrics. */
#pragma once

#include <stddef.h>

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Label value escaping of the text format: \ → \\, " → \", newline → \n; cut to size. */
void prom_escape(const char *in, char *out, size_t size);
