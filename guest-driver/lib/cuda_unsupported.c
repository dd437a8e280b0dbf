/* SPDX-License-Identifier: MIT */
/*
 * The one place the generated stubs of libcuda.so.1 (gen_cuda_stubs.py)
 * fail: CUDA's own error code, and one line on stderr per call the first
 * time, so that a program's log names what the vGPU lacks.
 */
#include <stdarg.h>
#include <stdio.h>

#include "client_api.h"
#include "cuda_unsupported.h"

void cuda_say_once(int *said, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "vgpu: %s\n", line);
}

int cuda_unsupported(const char *call, int *said)
{
	cuda_say_once(said,
		      "%s is not supported on a vGPU "
		      "(CUDA_ERROR_NOT_SUPPORTED)",
		      call);
	return CUDA_ERROR_NOT_SUPPORTED;
}
