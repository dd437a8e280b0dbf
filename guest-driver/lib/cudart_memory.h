/* SPDX-License-Identifier: MIT */
/*
 * The runtime's one copy path (cudart_memory.c), shared by the plain,
 * symbol and 2D copies: a runtime copy kind mapped onto our driver's
 * copies.
 */
#ifndef VGPU_CUDART_MEMORY_H
#define VGPU_CUDART_MEMORY_H

#include <stdint.h>

#include "cudart.h"

#define DPTR(p) ((CUdeviceptr)(uintptr_t)(p))

/* One copy of count bytes by kind, synchronous (sync) or on stream;
 * the runtime has been entered. */
CUresult cudart_copy(void *dst, const void *src, size_t count,
		     enum cudaMemcpyKind kind, cudaStream_t stream, int sync);

/* A copy's or fill's driver result as the runtime reports it (through
 * cudart_ret). */
cudaError_t cudart_copy_ret(CUresult res);

#endif /* VGPU_CUDART_MEMORY_H */
