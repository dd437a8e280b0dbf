/* SPDX-License-Identifier: MIT */
/*
 * Device memory: allocation, copies and fills.
 *
 * Synchronous copies return when done and also report an error left by
 * earlier asynchronous work. Async copies from the host return once the
 * data sits in the data area (the caller may reuse its buffer at once);
 * async copies to the host wait, since nothing else could write the
 * caller's buffer later (CUDA does the same for pageable memory).
 * cuMemcpy/cuMemcpyAsync tell device from host pointers by the process's
 * table of allocations.
 *
 * Page-locked host memory (cuMemAllocHost, cuMemHostAlloc) is a host
 * region shared with the worker: a copy whose host range lies inside one
 * is a single descriptor, no data-area chunks. Such copies wait for the
 * worker even in their Async forms (CUDA allows a copy from or to
 * page-locked memory to complete before the call returns). A worker
 * without regions (CUDA_ERROR_NOT_SUPPORTED) gets plain page-aligned
 * memory instead, copied in chunks as any host memory; so does a region
 * the worker refuses because its caps on pinned memory (per client, per
 * vGPU) are reached.
 *
 * On a host (the local transport) every region is also mapped into the
 * device, at one address for host and device (the worker's, where this
 * process moves its mapping), as CUDA's unified addressing has every
 * page-locked buffer, CU_MEMHOSTALLOC_DEVICEMAP or not: kernels read and
 * write it there. In a VM the guest's memory is not the worker's to
 * map, so there DEVICEMAP is CUDA_ERROR_NOT_SUPPORTED and
 * CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY says 0 (docs/DESIGN.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "client_api.h"
#include "cuda_unsupported.h"
#include "client_copy.h"
#include "client_pool.h"
#include "client_va.h"

VGPU_API CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_MEM_ALLOC};
	struct vgpu_cqe cqe;
	char why[512];
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!dptr || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	sqe.a[0] = bytesize;
	err = client_ring_call(&c->ring, &sqe, &cqe);
	if (err != CUDA_SUCCESS)
		return err;
	if (cqe.r[0] && client_va_claim(cqe.r[0], bytesize, why, sizeof(why))) {
		fprintf(stderr, "vgpu: cuMemAlloc refused: %s\n", why);
		sqe = (struct vgpu_sqe){.opcode = VGPU_OP_MEM_FREE,
					.a = {cqe.r[0]}};
		client_ring_call(&c->ring, &sqe, NULL);
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	if (cqe.r[0] == 0 || client_alloc_add(&c->allocs, cqe.r[0], bytesize)) {
		/* a pointer we cannot track is one we cannot hand out */
		sqe = (struct vgpu_sqe){.opcode = VGPU_OP_MEM_FREE,
					.a = {cqe.r[0]}};
		if (cqe.r[0])
			client_ring_call(&c->ring, &sqe, NULL);
		return cqe.r[0] ? CUDA_ERROR_OUT_OF_MEMORY
				: CUDA_ERROR_INVALID_VALUE;
	}
	*dptr = (CUdeviceptr)cqe.r[0];
	return CUDA_SUCCESS;
}

/*
 * The entry is marked as being freed before the worker frees the memory:
 * once it has, another thread's cuMemAlloc may get the same address back
 * before this one hears, and must be able to record it (the mark lets
 * the add drop our entry). Meanwhile the pointer reads as freed, and a
 * second cuMemFree of it fails. A refused free leaves it allocated.
 */
CUresult client_mem_free(struct client *c, CUdeviceptr dptr)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_MEM_FREE};
	uint64_t ticket;
	CUresult err;

	if (client_alloc_free_begin(&c->allocs, dptr, &ticket))
		return CUDA_ERROR_INVALID_VALUE;
	sqe.a[0] = dptr;
	err = client_ring_call(&c->ring, &sqe, NULL);
	client_alloc_free_end(&c->allocs, dptr, ticket, err == CUDA_SUCCESS);
	return err;
}

VGPU_API CUresult CUDAAPI cuMemFree(CUdeviceptr dptr)
{
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!dptr) /* nothing, as NVIDIA's driver: cudaFree(0) comes here */
		return CUDA_SUCCESS;
	/* a stream-ordered allocation: its pool forgets it (freed to the
	 * pool already: a double free) */
	if (client_pool_forget(dptr) < 0)
		return CUDA_ERROR_INVALID_VALUE;
	return client_mem_free(c, dptr);
}

VGPU_API CUresult CUDAAPI cuMemGetInfo(size_t *free, size_t *total)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_MEM_GET_INFO};
	struct vgpu_cqe cqe;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!free || !total)
		return CUDA_ERROR_INVALID_VALUE;
	err = client_ring_call(&c->ring, &sqe, &cqe);
	if (err != CUDA_SUCCESS)
		return err;
	*free = (size_t)cqe.r[0];
	*total = (size_t)cqe.r[1];
	return CUDA_SUCCESS;
}

/* ---- page-locked host memory ---------------------------------------- */

/* Plain page-aligned memory, for a worker without host regions or a
 * buffer larger than one region may be; recorded with handle 0. */
static CUresult host_alloc_plain(struct client *c, size_t bytes, void **pp)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct client_region reg = {0};
	void *p;

	if (bytes > SIZE_MAX - page)
		return CUDA_ERROR_OUT_OF_MEMORY;
	bytes = (bytes + page - 1) & ~(page - 1);
	p = aligned_alloc(page, bytes);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	reg.base = (uint64_t)(uintptr_t)p;
	reg.size = bytes;
	if (client_region_add(&c->regions, &reg)) {
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

/* Says once why mapped host memory was refused. */
static CUresult mapped_refused(const char *why, CUresult err)
{
	static int said;

	cuda_say_once(&said,
		      "cuMemHostAlloc: memory mapped into the device "
		      "(CU_MEMHOSTALLOC_DEVICEMAP) is not available: %s",
		      why);
	return err;
}

/*
 * A host region of bytes, mapped into the device where the transport
 * allows (CUDA's unified addressing: every page-locked buffer is
 * reachable from kernels at its host address, DEVICEMAP or not). Plain
 * memory when the worker has no regions or its caps on pinned memory
 * (this client's regions, all clients' of the vGPU) are reached: copies
 * through it still work, through the data area. A DEVICEMAP request
 * gets no such fallback where the device could not reach the buffer at
 * all (a VM, a worker without regions, an address taken), with one
 * stderr line; past the caps it gets plain memory too, said once:
 * NVIDIA's runtime may ask DEVICEMAP of every buffer, and most programs
 * only copy through them (one that asks for the device pointer then
 * gets CUDA_ERROR_INVALID_VALUE).
 */
static CUresult host_alloc(void **pp, size_t bytes, unsigned int flags)
{
	int want_map = (flags & CU_MEMHOSTALLOC_DEVICEMAP) != 0;
	struct client_region reg;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!pp || bytes == 0 ||
	    (flags & ~(unsigned int)(CU_MEMHOSTALLOC_PORTABLE |
				     CU_MEMHOSTALLOC_DEVICEMAP |
				     CU_MEMHOSTALLOC_WRITECOMBINED)))
		return CUDA_ERROR_INVALID_VALUE;
	if (want_map && !client_can_map_host(c))
		return mapped_refused(
			"a vGPU in a VM cannot address the "
			"guest's memory (CUDA_ERROR_NOT_SUPPORTED)",
			CUDA_ERROR_NOT_SUPPORTED);
	if (bytes > VGPU_HOST_REGION_MAX_BYTES)
		return want_map ? CUDA_ERROR_OUT_OF_MEMORY
				: host_alloc_plain(c, bytes, pp);
	err = __atomic_load_n(&c->regions.unsupported, __ATOMIC_RELAXED)
		      ? CUDA_ERROR_NOT_SUPPORTED
		      : client_region_create(&c->ring, bytes, &reg);
	if (err == CUDA_ERROR_NOT_SUPPORTED) {
		/* an older worker: keep the program working */
		__atomic_store_n(&c->regions.unsupported, 1, __ATOMIC_RELAXED);
		if (want_map)
			return mapped_refused("the worker has no host regions "
					      "(CUDA_ERROR_NOT_SUPPORTED)",
					      err);
		return host_alloc_plain(c, bytes, pp);
	}
	if (err == CUDA_ERROR_OUT_OF_MEMORY) {
		static int said;

		if (want_map)
			cuda_say_once(&said,
				      "cuMemHostAlloc: the vGPU's pinned "
				      "memory is used up: buffers from now on "
				      "are not mapped into the device "
				      "(CU_MEMHOSTALLOC_DEVICEMAP dropped)");
		return host_alloc_plain(c, bytes, pp);
	}
	if (err != CUDA_SUCCESS)
		return err;
	if (client_can_map_host(c)) {
		err = client_region_map_device(&c->ring, &reg);
		if (err != CUDA_SUCCESS && want_map) {
			client_region_destroy(&c->ring, &reg);
			return mapped_refused(
				"the worker cannot map it, or its device "
				"address is taken in this process "
				"(CUDA_ERROR_NOT_SUPPORTED)",
				err);
		}
	}
	reg.flags = flags;
	if (client_region_add(&c->regions, &reg)) {
		client_region_destroy(&c->ring, &reg);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = (void *)(uintptr_t)reg.base;
	return CUDA_SUCCESS;
}

/* A mapped buffer's device address: its own (unified addressing). */
VGPU_API CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p,
						    unsigned int Flags)
{
	struct client_region reg;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!pdptr || Flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!client_region_find(&c->regions, (uint64_t)(uintptr_t)p, 0, &reg) ||
	    !reg.mapped)
		return CUDA_ERROR_INVALID_VALUE; /* as CUDA: not mapped */
	*pdptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

/* The flags a page-locked buffer was allocated with. */
VGPU_API CUresult CUDAAPI cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
	struct client_region reg;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!pFlags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!client_region_find(&c->regions, (uint64_t)(uintptr_t)p, 0, &reg))
		return CUDA_ERROR_INVALID_VALUE;
	*pFlags = reg.flags;
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytesize)
{
	return host_alloc(pp, bytesize, 0);
}

VGPU_API CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize,
					 unsigned int Flags)
{
	return host_alloc(pp, bytesize, Flags);
}

VGPU_API CUresult CUDAAPI cuMemFreeHost(void *p)
{
	struct client_region reg;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!p ||
	    client_region_remove(&c->regions, (uint64_t)(uintptr_t)p, &reg))
		return CUDA_ERROR_INVALID_VALUE;
	if (reg.handle == 0) {
		free(p);
		return CUDA_SUCCESS;
	}
	err = client_region_destroy(&c->ring, &reg);
	/* a gone worker has dropped its regions already */
	return client_ring_dead(&c->ring) ? CUDA_SUCCESS : err;
}

/* ---- copies --------------------------------------------------------- */

/* H2D: one region descriptor when src lies inside one host region, else
 * chunks through the data area. */
static CUresult copy_htod(struct client *c, uint32_t s, uint64_t dst,
			  const void *src, size_t n, int sync)
{
	uint64_t h = (uint64_t)(uintptr_t)src;
	struct client_region reg;

	if (n && client_region_find(&c->regions, h, n, &reg) && reg.handle)
		return client_copy_region(
			&c->ring, s, VGPU_OP_MEMCPY_REGION_HTOD, reg.handle,
			dst, h - reg.base, n, sync);
	return client_copy_htod(&c->ring, s, dst, src, n, sync);
}

/* D2H: as copy_htod; waits in every form (see client_copy_dtoh). */
static CUresult copy_dtoh(struct client *c, uint32_t s, void *dst, uint64_t src,
			  size_t n, int sync)
{
	uint64_t h = (uint64_t)(uintptr_t)dst;
	struct client_region reg;

	if (n && client_region_find(&c->regions, h, n, &reg) && reg.handle)
		return client_copy_region(
			&c->ring, s, VGPU_OP_MEMCPY_REGION_DTOH, reg.handle,
			src, h - reg.base, n, sync);
	return client_copy_dtoh(&c->ring, s, dst, src, n);
}

/* Entry check of the copies: context, stream, and a host pointer that
 * may only be NULL when nothing is copied. On success the stream is in
 * use until client_stream_end (stages: see client_stream_begin). */
static CUresult copy_enter(struct client **c, CUstream s,
			   struct client_stream_use *u, const void *host,
			   size_t n, int stages)
{
	CUresult err = client_enter(c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!host && n)
		return CUDA_ERROR_INVALID_VALUE;
	return client_stream_begin(*c, s, stages, u);
}

VGPU_API CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice,
				       const void *srcHost, size_t ByteCount)
{
	struct client *c;
	struct client_stream_use u;
	CUresult err = copy_enter(&c, NULL, &u, srcHost, ByteCount, 1);

	if (err != CUDA_SUCCESS)
		return err;
	return client_stream_end(
		c, &u,
		copy_htod(c, u.handle, dstDevice, srcHost, ByteCount, 1));
}

VGPU_API CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice,
				       size_t ByteCount)
{
	struct client *c;
	struct client_stream_use u;
	CUresult err = copy_enter(&c, NULL, &u, dstHost, ByteCount, 0);

	if (err != CUDA_SUCCESS)
		return err;
	return client_stream_end(
		c, &u,
		copy_dtoh(c, u.handle, dstHost, srcDevice, ByteCount, 1));
}

VGPU_API CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice,
				       CUdeviceptr srcDevice, size_t ByteCount)
{
	struct client *c;
	struct client_stream_use u;
	CUresult err = copy_enter(&c, NULL, &u, "", 0, 0);

	if (err != CUDA_SUCCESS)
		return err;
	return client_stream_end(c, &u,
				 client_copy_dtod(&c->ring, u.handle, dstDevice,
						  srcDevice, ByteCount, 1));
}

VGPU_API CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice,
					    const void *srcHost,
					    size_t ByteCount, CUstream hStream)
{
	struct client *c;
	struct client_stream_use u;
	CUresult err = copy_enter(&c, hStream, &u, srcHost, ByteCount, 1);

	if (err != CUDA_SUCCESS)
		return err;
	return client_stream_end(
		c, &u,
		copy_htod(c, u.handle, dstDevice, srcHost, ByteCount, 0));
}

VGPU_API CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost,
					    CUdeviceptr srcDevice,
					    size_t ByteCount, CUstream hStream)
{
	struct client *c;
	struct client_stream_use u;
	CUresult err = copy_enter(&c, hStream, &u, dstHost, ByteCount, 0);

	if (err != CUDA_SUCCESS)
		return err;
	return client_stream_end(
		c, &u,
		copy_dtoh(c, u.handle, dstHost, srcDevice, ByteCount, 0));
}

VGPU_API CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice,
					    CUdeviceptr srcDevice,
					    size_t ByteCount, CUstream hStream)
{
	struct client *c;
	struct client_stream_use u;
	CUresult err = copy_enter(&c, hStream, &u, "", 0, 0);

	if (err != CUDA_SUCCESS)
		return err;
	return client_stream_end(c, &u,
				 client_copy_dtod(&c->ring, u.handle, dstDevice,
						  srcDevice, ByteCount, 0));
}

/* Unified copy: each side is device memory when it lies in one of this
 * process's allocations, host memory otherwise. On stream s (in use). */
static CUresult copy_unified_on(struct client *c, uint32_t s, CUdeviceptr dst,
				CUdeviceptr src, size_t n, int sync)
{
	int ddev, sdev;

	if (n == 0)
		return CUDA_SUCCESS;
	if (!dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	ddev = client_alloc_find(&c->allocs, dst, NULL);
	sdev = client_alloc_find(&c->allocs, src, NULL);
	/* an allocation another thread is freeing is device memory going
	 * away, not host memory to memmove: refused, as CUDA refuses a
	 * freed device pointer (once freed, the table no longer knows it) */
	if ((!ddev && client_alloc_freeing(&c->allocs, dst)) ||
	    (!sdev && client_alloc_freeing(&c->allocs, src)))
		return CUDA_ERROR_INVALID_VALUE;
	if (ddev && sdev)
		return client_copy_dtod(&c->ring, s, dst, src, n, sync);
	if (ddev)
		return copy_htod(c, s, dst, (const void *)(uintptr_t)src, n,
				 sync);
	if (sdev)
		return copy_dtoh(c, s, (void *)(uintptr_t)dst, src, n, sync);
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

static CUresult copy_unified(CUdeviceptr dst, CUdeviceptr src, size_t n,
			     CUstream hStream, int sync)
{
	struct client_stream_use u;
	struct client *c;
	/* staging counted in: which side is the host's is known later */
	CUresult err = copy_enter(&c, hStream, &u, "", 0, n != 0);

	if (err != CUDA_SUCCESS)
		return err;
	return client_stream_end(
		c, &u, copy_unified_on(c, u.handle, dst, src, n, sync));
}

VGPU_API CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src,
				   size_t ByteCount)
{
	return copy_unified(dst, src, ByteCount, NULL, 1);
}

VGPU_API CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
					size_t ByteCount, CUstream hStream)
{
	return copy_unified(dst, src, ByteCount, hStream, 0);
}

/* ---- fills ---------------------------------------------------------- */

static CUresult memset_common(CUdeviceptr dst, uint32_t value, uint32_t elem,
			      size_t n, CUstream hStream, int sync)
{
	struct client_stream_use u;
	struct client *c;
	CUresult err = copy_enter(&c, hStream, &u, "", 0, 0);

	if (err != CUDA_SUCCESS)
		return err;
	if (dst % elem)
		return client_stream_end(c, &u, CUDA_ERROR_INVALID_VALUE);
	return client_stream_end(
		c, &u,
		client_memset(&c->ring, u.handle, dst, value, elem, n, sync));
}

VGPU_API CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc,
				     size_t N)
{
	return memset_common(dstDevice, uc, 1, N, NULL, 1);
}

VGPU_API CUresult CUDAAPI cuMemsetD16(CUdeviceptr dstDevice, unsigned short us,
				      size_t N)
{
	return memset_common(dstDevice, us, 2, N, NULL, 1);
}

VGPU_API CUresult CUDAAPI cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui,
				      size_t N)
{
	return memset_common(dstDevice, ui, 4, N, NULL, 1);
}

VGPU_API CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice,
					  unsigned char uc, size_t N,
					  CUstream hStream)
{
	return memset_common(dstDevice, uc, 1, N, hStream, 0);
}

VGPU_API CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice,
					   unsigned short us, size_t N,
					   CUstream hStream)
{
	return memset_common(dstDevice, us, 2, N, hStream, 0);
}

VGPU_API CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice,
					   unsigned int ui, size_t N,
					   CUstream hStream)
{
	return memset_common(dstDevice, ui, 4, N, hStream, 0);
}
