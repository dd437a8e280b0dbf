/* SPDX-License-Identifier: MIT */
/*
 * __cudaPushCallConfiguration / __cudaPopCallConfiguration over a
 * per-thread stack of launch configurations.
 */
#include "cudart.h"
#include "cudart_callcfg.h"

static __thread struct cudart_callcfg_stack callcfg_stack;

int cudart_callcfg_push(struct cudart_callcfg_stack *s,
			const struct cudart_callcfg *cfg)
{
	if (s->n == CUDART_CALLCFG_DEPTH)
		return -1;
	s->v[s->n++] = *cfg;
	return 0;
}

int cudart_callcfg_pop(struct cudart_callcfg_stack *s,
		       struct cudart_callcfg *cfg)
{
	if (s->n == 0)
		return -1;
	*cfg = s->v[--s->n];
	return 0;
}

/* nvcc launches the stub only when this returns 0. */
CUDART_API unsigned CUDARTAPI
__cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
			    struct CUstream_st *stream)
{
	struct cudart_callcfg cfg = {
		.grid = gridDim,
		.block = blockDim,
		.shmem = sharedMem,
		.stream = stream,
	};

	if (cudart_callcfg_push(&callcfg_stack, &cfg)) {
		cudart_ret(cudaErrorInvalidConfiguration);
		return 1;
	}
	return 0;
}

/* stream points to the stub's cudaStream_t. */
CUDART_API cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3 *gridDim,
							    dim3 *blockDim,
							    size_t *sharedMem,
							    void *stream)
{
	struct cudart_callcfg cfg;

	if (!gridDim || !blockDim || !sharedMem || !stream)
		return cudart_ret(cudaErrorInvalidValue);
	if (cudart_callcfg_pop(&callcfg_stack, &cfg))
		return cudart_ret(cudaErrorMissingConfiguration);
	*gridDim = cfg.grid;
	*blockDim = cfg.block;
	*sharedMem = cfg.shmem;
	*(cudaStream_t *)stream = cfg.stream;
	return cudaSuccess;
}
