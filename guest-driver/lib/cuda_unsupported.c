/* SPDX-License-Identifier: MIT */
/*
 * The one place the generated stubs of libcuda.so.1 (gen_cuda_stubs.py)
 * fail: CUDA's own error code, and one line on stderr per call the first
 * time, so that a program's log names what the vGPU lacks.
 */
#include <stdio.h>

#include "client_api.h"
#include "cuda_unsupported.h"

int cuda_unsupported(const char *call, int *said)
{
	if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		fprintf(stderr,
			"vgpu: %s is not supported on a vGPU "
			"(CUDA_ERROR_NOT_SUPPORTED)\n",
			call);
	return CUDA_ERROR_NOT_SUPPORTED;
}
