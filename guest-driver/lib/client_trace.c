/* SPDX-License-Identifier: MIT */
/* VGPU_TRACE=1: see client_trace.h. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_trace.h"

static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static int trace_enabled;

static void trace_init(void)
{
	const char *v = getenv("VGPU_TRACE");

	trace_enabled = v && !strcmp(v, "1");
}

int client_trace_on(void)
{
	pthread_once(&trace_once, trace_init);
	return trace_enabled;
}

void client_trace(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "vgpu-trace: ");
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fputs(line, stderr); /* one call: lines of threads do not mix */
}
