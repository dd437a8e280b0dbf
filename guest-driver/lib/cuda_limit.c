/* SPDX-License-Identifier: MIT */
/*
 * cuCtxGetLimit / cuCtxSetLimit (and cudaDeviceGetLimit/SetLimit over
 * them): a vGPU's limits are its worker's context's, which all its
 * clients share as they share the context (VGPU_OP_CTX_LIMIT, protocol
 * 1.4). The worker caps what would take device memory outside the vGPU's
 * quota (stack, malloc heap, printf FIFO) and refuses the whole GPU's L2
 * persisting size (CUDA_ERROR_UNSUPPORTED_LIMIT).
 */
#include "client.h"
#include "client_api.h"

static CUresult limit_call(CUlimit limit, int set, size_t value, size_t *out)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_CTX_LIMIT,
			       .a = {(uint64_t)limit, (uint64_t)set, value}};
	struct vgpu_cqe cqe;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if ((unsigned int)limit >= CU_LIMIT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	err = client_ring_call(&c->ring, &sqe, &cqe);
	if (err == CUDA_SUCCESS && out)
		*out = (size_t)cqe.r[0];
	return err;
}

VGPU_API CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	if (!pvalue)
		return CUDA_ERROR_INVALID_VALUE;
	return limit_call(limit, 0, 0, pvalue);
}

VGPU_API CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
	return limit_call(limit, 1, value, NULL);
}
