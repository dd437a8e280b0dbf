/* SPDX-License-Identifier: MIT */
/*
 * Copies and fills that go through the ring. Host data travels through
 * the data area in chunks of at most VGPU_COPY_CHUNK_BYTES, pipelined:
 * while the worker copies chunk k, the client fills (H2D) or drains (D2H)
 * another, with several chunks in flight.
 *
 * "sync" calls return when the work is done and report its error (or an
 * earlier deferred one); the others are submitted and their errors
 * deferred to the next synchronizing call.
 */
#ifndef VGPU_CLIENT_COPY_H
#define VGPU_CLIENT_COPY_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "client_ring.h"

/* The data held back from the caller's memory: it may be reused at once
 * even when !sync. */
CUresult client_copy_htod(struct client_ring *r, uint32_t stream, uint64_t dst,
			  const void *src, size_t n, int sync);
/* Always waits: the caller's buffer must hold the data on return. */
CUresult client_copy_dtoh(struct client_ring *r, uint32_t stream, void *dst,
			  uint64_t src, size_t n);
CUresult client_copy_dtod(struct client_ring *r, uint32_t stream, uint64_t dst,
			  uint64_t src, size_t n, int sync);
/* count elements of elem_size (1, 2 or 4) bytes, each set to value. */
CUresult client_memset(struct client_ring *r, uint32_t stream, uint64_t dst,
		       uint32_t value, uint32_t elem_size, size_t count,
		       int sync);

/*
 * One copy between device memory and a host region (opcode
 * VGPU_OP_MEMCPY_REGION_HTOD or _DTOH): dev, n bytes at offset off of
 * region handle. Waits for it even when !sync (CUDA lets a copy from or
 * to page-locked memory finish before the call returns); sync also
 * reports an earlier deferred error.
 */
CUresult client_copy_region(struct client_ring *r, uint32_t stream,
			    uint16_t opcode, uint32_t handle, uint64_t dev,
			    uint64_t off, size_t n, int sync);

/* Bytes per chunk for this ring: VGPU_COPY_CHUNK_BYTES, or less when the
 * data area is small, so that at least four fit. */
uint64_t client_copy_chunk(const struct client_ring *r);

/* cuda_hostfn.c: wait for the host functions already enqueued on stream h
 * (before staging memory they may write). */
void client_hostfn_wait_stream(uint32_t h);
/* The same for every stream (cuda_hostfn.c). */
void client_hostfn_wait_all(void);

#endif /* VGPU_CLIENT_COPY_H */
