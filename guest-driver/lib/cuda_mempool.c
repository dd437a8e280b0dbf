/* SPDX-License-Identifier: MIT */
/*
 * Stream-ordered allocation: cuMemAllocAsync, cuMemFreeAsync and the
 * memory pools (cuMemPool*, the device's default and current pool), over
 * the guest's pools (client_pool.c). cuMemFreeAsync of cuMemAlloc memory
 * frees it at once, behind all queued work. A pool lives on the one device of
 * the vGPU, in its memory and within its quota; pools shared between
 * processes (export and import) are not offered.
 */
#include <string.h>

#include "client.h"
#include "client_api.h"
#include "client_pool.h"

/* Entry check of the async calls: a client and the ring's stream. */
static CUresult async_enter(struct client **c, CUstream s, uint32_t *stream)
{
	CUresult err = client_enter(c);

	if (err != CUDA_SUCCESS)
		return err;
	return client_stream_handle(*c, s, stream);
}

VGPU_API CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr,
						  size_t bytesize,
						  CUmemoryPool pool,
						  CUstream hStream)
{
	struct client *c;
	uint32_t s;
	CUresult err = async_enter(&c, hStream, &s);

	if (err != CUDA_SUCCESS)
		return err;
	if (!dptr || !bytesize || !pool)
		return CUDA_ERROR_INVALID_VALUE;
	return client_pool_alloc(c, pool, bytesize, s, dptr);
}

VGPU_API CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize,
					  CUstream hStream)
{
	struct client *c;
	uint32_t s;
	CUresult err = async_enter(&c, hStream, &s);

	if (err != CUDA_SUCCESS)
		return err;
	if (!dptr || !bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	return client_pool_alloc(c, NULL, bytesize, s, dptr); /* current */
}

VGPU_API CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	struct client *c;
	uint32_t s;
	CUresult err = async_enter(&c, hStream, &s);

	if (err != CUDA_SUCCESS)
		return err;
	if (!dptr)
		return CUDA_SUCCESS; /* as cuMemFree */
	err = client_pool_free(dptr, s);
	if (err != CUDA_ERROR_NOT_FOUND)
		return err;
	/* cuMemAlloc memory (or none): freed now, after every stream's work
	 * (the worker's free waits for it), which keeps stream order */
	return cuMemFree(dptr);
}

/* ---- the device's pools ----------------------------------------------- */

/* Calls that need a client but no stream: a pool's check is the
 * engine's, under its lock. */
static CUresult pool_enter(void)
{
	struct client *c;

	return client_enter(&c);
}

static CUresult device_ok(CUdevice dev)
{
	struct client *c;

	return client_device_enter(dev, &c);
}

VGPU_API CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out,
						    CUdevice dev)
{
	CUresult err = device_ok(dev);

	if (err != CUDA_SUCCESS)
		return err;
	if (!pool_out)
		return CUDA_ERROR_INVALID_VALUE;
	*pool_out = (CUmemoryPool)client_pool_default();
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	CUresult err = device_ok(dev);

	if (err != CUDA_SUCCESS)
		return err;
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	*pool = (CUmemoryPool)client_pool_current();
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	CUresult err = device_ok(dev);

	if (err != CUDA_SUCCESS)
		return err;
	return client_pool_set_current(pool);
}

/* The location-based forms (CUDA 13): the vGPU's device only, pinned
 * device memory only. */
static CUresult location_ok(const CUmemLocation *loc, CUmemAllocationType type)
{
	CUresult err = device_ok(0);

	if (err != CUDA_SUCCESS)
		return err;
	if (!loc)
		return CUDA_ERROR_INVALID_VALUE;
	if (type == CU_MEM_ALLOCATION_TYPE_MANAGED)
		return CUDA_ERROR_NOT_SUPPORTED; /* managed memory */
	if (type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_NOT_SUPPORTED; /* host pools */
	return loc->id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

VGPU_API CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool *pool_out,
						 CUmemLocation *location,
						 CUmemAllocationType type)
{
	CUresult err = location_ok(location, type);

	if (err != CUDA_SUCCESS)
		return err;
	return cuDeviceGetDefaultMemPool(pool_out, 0);
}

VGPU_API CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool *pool,
					  CUmemLocation *location,
					  CUmemAllocationType type)
{
	CUresult err = location_ok(location, type);

	if (err != CUDA_SUCCESS)
		return err;
	return cuDeviceGetMemPool(pool, 0);
}

VGPU_API CUresult CUDAAPI cuMemSetMemPool(CUmemLocation *location,
					  CUmemAllocationType type,
					  CUmemoryPool pool)
{
	CUresult err = location_ok(location, type);

	if (err != CUDA_SUCCESS)
		return err;
	return cuDeviceSetMemPool(0, pool);
}

/* ---- pools ------------------------------------------------------------ */

VGPU_API CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool,
					  const CUmemPoolProps *props)
{
	struct client_pool *p;
	CUresult err = device_ok(0);
	static const unsigned char zero[sizeof(props->reserved)];

	if (err != CUDA_SUCCESS)
		return err;
	if (!pool || !props ||
	    props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    memcmp(props->reserved, zero, sizeof(zero)))
		return CUDA_ERROR_INVALID_VALUE;
	if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    props->handleTypes != CU_MEM_HANDLE_TYPE_NONE || props->usage)
		return CUDA_ERROR_NOT_SUPPORTED; /* host or shared pools */
	if (props->location.id != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	err = client_pool_create(&p, props->maxSize);
	if (err == CUDA_SUCCESS)
		*pool = (CUmemoryPool)p;
	return err;
}

VGPU_API CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
	CUresult err = pool_enter();

	return err != CUDA_SUCCESS ? err : client_pool_destroy(pool);
}

VGPU_API CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool,
					  size_t minBytesToKeep)
{
	CUresult err = pool_enter();

	return err != CUDA_SUCCESS ? err
				   : client_pool_trim(pool, minBytesToKeep);
}

VGPU_API CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool,
						CUmemPool_attribute attr,
						void *value)
{
	CUresult err = pool_enter();

	return err != CUDA_SUCCESS
		       ? err
		       : client_pool_set_attribute(pool, attr, value);
}

VGPU_API CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool,
						CUmemPool_attribute attr,
						void *value)
{
	CUresult err = pool_enter();

	return err != CUDA_SUCCESS
		       ? err
		       : client_pool_get_attribute(pool, attr, value);
}

/* The one device reads and writes every pool's memory; no other may. */
VGPU_API CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool,
					     const CUmemAccessDesc *map,
					     size_t count)
{
	CUresult err = pool_enter();
	size_t i;

	if (err != CUDA_SUCCESS)
		return err;
	if (!client_pool_check(pool) || (count && !map))
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < count; i++) {
		if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    map[i].location.id != 0)
			return CUDA_ERROR_INVALID_DEVICE;
		if (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return CUDA_ERROR_INVALID_VALUE; /* its own device */
	}
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags *flags,
					     CUmemoryPool memPool,
					     CUmemLocation *location)
{
	CUresult err = pool_enter();

	if (err != CUDA_SUCCESS)
		return err;
	if (!flags || !location || !client_pool_check(memPool))
		return CUDA_ERROR_INVALID_VALUE;
	if (location->type != CU_MEM_LOCATION_TYPE_DEVICE || location->id != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return CUDA_SUCCESS;
}
