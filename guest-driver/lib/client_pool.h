/* SPDX-License-Identifier: MIT */
/*
 * Stream-ordered memory pools (client_pool.c): what cuMemAllocAsync,
 * cuMemFreeAsync and the cuMemPool* calls (cuda_mempool.c) are built on.
 * A pool is named by its CUmemoryPool handle, checked under the pools'
 * lock by every call that takes one (CUDA_ERROR_INVALID_VALUE for a pool
 * that is not, or no longer, there).
 */
#ifndef VGPU_CLIENT_POOL_H
#define VGPU_CLIENT_POOL_H

#include <cuda.h>
#include <stdint.h>

struct client;
struct client_pool;

/* The process's default pool of the device (there is one device). */
struct client_pool *client_pool_default(void);
/* The pool cuMemAllocAsync takes from (cuDeviceSetMemPool). */
struct client_pool *client_pool_current(void);
CUresult client_pool_set_current(CUmemoryPool h);
/* The pool h names, or NULL. */
struct client_pool *client_pool_check(CUmemoryPool h);

CUresult client_pool_create(struct client_pool **out, uint64_t max_bytes);
/* Gives back what h holds unused; its allocations still in use go back
 * to the vGPU as they are freed. The default pool is not destroyed. */
CUresult client_pool_destroy(CUmemoryPool h);

/* bytes from the pool h names (NULL: the current pool) for work on
 * stream (a ring stream handle): a block freed on that stream, or one
 * whose free a wait has since covered, or a new allocation
 * (cuMemAlloc). */
CUresult client_pool_alloc(struct client *c, CUmemoryPool h, uint64_t bytes,
			   uint32_t stream, CUdeviceptr *out);
/* ptr back to its pool as of stream's order: reused on that stream at
 * once, on others once a wait has covered it (a destroyed pool's block
 * goes back to the vGPU). CUDA_ERROR_NOT_FOUND when ptr is no pool's,
 * CUDA_ERROR_INVALID_VALUE when it is freed already. */
CUresult client_pool_free(CUdeviceptr ptr, uint32_t stream);
/* cuMemFree of ptr: 1 when ptr was a pool allocation in use (the pool
 * forgets it; the caller frees it), -1 when it is one already freed to
 * its pool (a double free), 0 when it is no pool's. */
int client_pool_forget(CUdeviceptr ptr);

/* How many frees have been made: taken before a wait, it says which
 * frees the wait covers (one another thread makes meanwhile, maybe of
 * work queued after the wait began, is not). */
uint64_t client_pool_mark(void);
/* The stream's work queued before mark was taken is done (synchronised
 * or destroyed): its blocks freed by then may be reused anywhere. */
void client_pool_stream_idle(uint32_t stream, uint64_t mark);
/* Likewise for every stream (a context synchronise); then each pool
 * gives back what it holds unused above its release threshold. */
void client_pool_ctx_idle(uint64_t mark);
/* Gives back what h holds unused until it holds at most keep bytes. */
CUresult client_pool_trim(CUmemoryPool h, uint64_t keep);

/* An attribute of h (value: an int for the reuse flags, a cuuint64_t for
 * the rest; NULL is CUDA_ERROR_INVALID_VALUE). */
CUresult client_pool_get_attribute(CUmemoryPool h, CUmemPool_attribute attr,
				   void *value);
CUresult client_pool_set_attribute(CUmemoryPool h, CUmemPool_attribute attr,
				   const void *value);

/* cuDevicePrimaryCtxReset: every pool allocation is freed with the rest
 * (they are in the allocation table); the pools forget them, the pools
 * created are gone, the default pool is as at start. */
void client_pool_reset(void);

#endif /* VGPU_CLIENT_POOL_H */
