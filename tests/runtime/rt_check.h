// SPDX-License-Identifier: MIT
/*
 * What every runtime-API test program has, as a CUDA user writes it: a
 * CHECK macro that names the failing call and the runtime's error string,
 * and a check that a kernel launch was accepted. Header-only.
 */
#ifndef VGPU_RT_CHECK_H
#define VGPU_RT_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints "file:line: call: <error string> (<error name>)", exits 1. */
#define CHECK(call)                                                            \
	do {                                                                   \
		cudaError_t e_ = (call);                                       \
		if (e_ != cudaSuccess) {                                       \
			fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__,      \
				__LINE__, #call, cudaGetErrorString(e_),       \
				cudaGetErrorName(e_));                         \
			exit(1);                                               \
		}                                                              \
	} while (0)

/* After kernel<<<...>>>(...): was the launch accepted? */
#define CHECK_LAUNCH() CHECK(cudaGetLastError())

#endif
