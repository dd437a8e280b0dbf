/* SPDX-License-Identifier: MIT */
/*
 * The one place the library's refusals go through (nvml_unsupported.h):
 * NVML's own error code, and under VGPU_TRACE=1 one line per call.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml_state.h"
#include "nvml_unsupported.h"

static pthread_once_t nvml_trace_once = PTHREAD_ONCE_INIT;
static int nvml_trace_on;

static void nvml_trace_init(void)
{
	const char *v = getenv("VGPU_TRACE");

	nvml_trace_on = v && !strcmp(v, "1");
}

void nvml_say_unsupported(const char *call, int *said)
{
	pthread_once(&nvml_trace_once, nvml_trace_init);
	if (!nvml_trace_on || __atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		return;
	fprintf(stderr,
		"vgpu: %s is not supported on a vGPU "
		"(NVML_ERROR_NOT_SUPPORTED)\n",
		call);
}

int nvml_unsupported(const char *call, int *said)
{
	const struct nvml_cuda *cu;

	if (nvml_enter(&cu) != NVML_SUCCESS)
		return NVML_ERROR_UNINITIALIZED;
	nvml_say_unsupported(call, said);
	return NVML_ERROR_NOT_SUPPORTED;
}
