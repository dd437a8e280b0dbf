/* SPDX-License-Identifier: MIT */
/*
 * The launch configuration of <<<grid, block, shmem, stream>>>: nvcc's
 * code pushes it (__cudaPushCallConfiguration) and the kernel's host
 * stub pops it (__cudaPopCallConfiguration) before it launches. The
 * stack is per thread; it is a stack because an argument of a launch may
 * itself launch a kernel.
 */
#ifndef VGPU_CUDART_CALLCFG_H
#define VGPU_CUDART_CALLCFG_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#define CUDART_CALLCFG_DEPTH 32

struct cudart_callcfg {
	dim3 grid, block;
	size_t shmem;
	cudaStream_t stream;
};

struct cudart_callcfg_stack {
	struct cudart_callcfg v[CUDART_CALLCFG_DEPTH];
	unsigned int n;
};

/* 0, or -1 when the stack is full. */
int cudart_callcfg_push(struct cudart_callcfg_stack *s,
			const struct cudart_callcfg *cfg);

/* 0, or -1 when the stack is empty. */
int cudart_callcfg_pop(struct cudart_callcfg_stack *s,
		       struct cudart_callcfg *cfg);

/* nvcc's entry points (declared for C here; crt/ headers are C++). */
unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim,
					       size_t sharedMem,
					       struct CUstream_st *stream);
cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim,
						 size_t *sharedMem,
						 void *stream);

#endif /* VGPU_CUDART_CALLCFG_H */
