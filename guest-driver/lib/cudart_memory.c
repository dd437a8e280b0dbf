/* SPDX-License-Identifier: MIT */
/*
 * Memory: device allocations, pinned host memory, copies, fills and
 * symbols, over our driver API.
 *
 * Pinned host memory is the driver's page-locked memory (cuMemHostAlloc):
 * a host region shared with the worker, so that copies from and to it
 * are one descriptor each, not chunks through the data area. cudaMemcpyDefault
 * tells device from host pointers by the driver's table of cudaMalloc'd
 * ranges: a symbol's address is not in it, so use an explicit kind (or
 * cudaMemcpyToSymbol) for variables.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cudart.h"
#include "cudart_memory.h"
#include "cudart_module.h"

/* ---- pinned host memory ---------------------------------------------- */

/* Page-locked memory is the driver's: a host region shared with the
 * worker (copies from and to it skip the data area), or plain memory
 * from a worker without regions. cuMemFreeHost refuses any pointer that
 * did not come from it. */
static cudaError_t host_alloc(void **ptr, size_t size, unsigned int flags)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!ptr || (flags & ~(unsigned int)(cudaHostAllocPortable |
					     cudaHostAllocMapped |
					     cudaHostAllocWriteCombined)))
		return cudart_ret(cudaErrorInvalidValue);
	if (flags & cudaHostAllocMapped)
		return cudart_unsupported("cudaHostAlloc(cudaHostAllocMapped)");
	/* CUDA hands out a buffer even for 0 bytes */
	return cudart_ret_cu(
		cuMemHostAlloc(ptr, size ? size : 1,
			       flags & (CU_MEMHOSTALLOC_PORTABLE |
					CU_MEMHOSTALLOC_WRITECOMBINED)));
}

CUDART_API cudaError_t CUDARTAPI cudaMallocHost(void **ptr, size_t size)
{
	return host_alloc(ptr, size, cudaHostAllocDefault);
}

CUDART_API cudaError_t CUDARTAPI cudaHostAlloc(void **pHost, size_t size,
					       unsigned int flags)
{
	return host_alloc(pHost, size, flags);
}

CUDART_API cudaError_t CUDARTAPI cudaFreeHost(void *ptr)
{
	cudaError_t err;

	if (!ptr)
		return cudaSuccess;
	err = cudart_enter();
	if (err != cudaSuccess)
		return cudart_ret(err);
	return cudart_ret_cu(cuMemFreeHost(ptr));
}

/* Registration would pin; every copy is staged anyway, so it is a no-op
 * that succeeds (mapping into the device is not offered). */
CUDART_API cudaError_t CUDARTAPI cudaHostRegister(void *ptr, size_t size,
						  unsigned int flags)
{
	if (!ptr || !size)
		return cudart_ret(cudaErrorInvalidValue);
	if (flags & (cudaHostRegisterMapped | cudaHostRegisterIoMemory))
		return cudart_unsupported("cudaHostRegister(mapped)");
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI cudaHostUnregister(void *ptr)
{
	return ptr ? cudaSuccess : cudart_ret(cudaErrorInvalidValue);
}

/* ---- device memory ---------------------------------------------------- */

CUDART_API cudaError_t CUDARTAPI cudaMalloc(void **devPtr, size_t size)
{
	cudaError_t err = cudart_enter();
	CUdeviceptr d;
	CUresult res;

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!devPtr)
		return cudart_ret(cudaErrorInvalidValue);
	if (size == 0) {
		*devPtr = NULL;
		return cudaSuccess;
	}
	res = cuMemAlloc(&d, size);
	if (res == CUDA_ERROR_OUT_OF_MEMORY)
		return cudart_ret(cudaErrorMemoryAllocation);
	if (res != CUDA_SUCCESS)
		return cudart_ret_cu(res);
	*devPtr = (void *)(uintptr_t)d;
	return cudaSuccess;
}

/* cudaFree(NULL) is the classic way to start the runtime. */
CUDART_API cudaError_t CUDARTAPI cudaFree(void *devPtr)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!devPtr)
		return cudaSuccess;
	return cudart_ret_cu(cuMemFree((CUdeviceptr)(uintptr_t)devPtr));
}

/* Allocation is immediate, so stream order is kept trivially. */
CUDART_API cudaError_t CUDARTAPI cudaMallocAsync(void **devPtr, size_t size,
						 cudaStream_t hStream)
{
	return cudaMalloc(devPtr, size);
}

/* Frees once the stream's earlier work is done. */
CUDART_API cudaError_t CUDARTAPI cudaFreeAsync(void *devPtr,
					       cudaStream_t hStream)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	err = cudart_error_from_cu(cuStreamSynchronize(cudart_stream(hStream)));
	if (err != cudaSuccess)
		return cudart_ret(err);
	return cudaFree(devPtr);
}

CUDART_API cudaError_t CUDARTAPI cudaMemGetInfo(size_t *free, size_t *total)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!free || !total)
		return cudart_ret(cudaErrorInvalidValue);
	return cudart_ret_cu(cuMemGetInfo(free, total));
}

/* ---- copies ------------------------------------------------------------ */

CUresult cudart_copy(void *dst, const void *src, size_t count,
		     enum cudaMemcpyKind kind, cudaStream_t stream, int sync)
{
	CUstream s = cudart_stream(stream);

	if (count == 0)
		return CUDA_SUCCESS;
	if (!dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	switch (kind) {
	case cudaMemcpyHostToHost:
		/* in stream order, as CUDA does it */
		if (!sync) {
			CUresult res = cuStreamSynchronize(s);

			if (res != CUDA_SUCCESS)
				return res;
		}
		memmove(dst, src, count);
		return CUDA_SUCCESS;
	case cudaMemcpyHostToDevice:
		return sync ? cuMemcpyHtoD(DPTR(dst), src, count)
			    : cuMemcpyHtoDAsync(DPTR(dst), src, count, s);
	case cudaMemcpyDeviceToHost:
		return sync ? cuMemcpyDtoH(dst, DPTR(src), count)
			    : cuMemcpyDtoHAsync(dst, DPTR(src), count, s);
	case cudaMemcpyDeviceToDevice:
		return sync ? cuMemcpyDtoD(DPTR(dst), DPTR(src), count)
			    : cuMemcpyDtoDAsync(DPTR(dst), DPTR(src), count, s);
	case cudaMemcpyDefault:
		return sync ? cuMemcpy(DPTR(dst), DPTR(src), count)
			    : cuMemcpyAsync(DPTR(dst), DPTR(src), count, s);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

cudaError_t cudart_copy_ret(CUresult res)
{
	/* CUDA names a bad direction or pointer this way */
	if (res == CUDA_ERROR_INVALID_VALUE)
		return cudart_ret(cudaErrorInvalidValue);
	return cudart_ret_cu(res);
}

static cudaError_t memcpy_common(void *dst, const void *src, size_t count,
				 enum cudaMemcpyKind kind, cudaStream_t stream,
				 int sync)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	if ((unsigned int)kind > cudaMemcpyDefault)
		return cudart_ret(cudaErrorInvalidMemcpyDirection);
	return cudart_copy_ret(
		cudart_copy(dst, src, count, kind, stream, sync));
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpy(void *dst, const void *src,
					    size_t count,
					    enum cudaMemcpyKind kind)
{
	return memcpy_common(dst, src, count, kind, NULL, 1);
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpyAsync(void *dst, const void *src,
						 size_t count,
						 enum cudaMemcpyKind kind,
						 cudaStream_t stream)
{
	return memcpy_common(dst, src, count, kind, stream, 0);
}

CUDART_API cudaError_t CUDARTAPI cudaMemset(void *devPtr, int value,
					    size_t count)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (count == 0)
		return cudaSuccess;
	return cudart_copy_ret(
		cuMemsetD8(DPTR(devPtr), (unsigned char)value, count));
}

CUDART_API cudaError_t CUDARTAPI cudaMemsetAsync(void *devPtr, int value,
						 size_t count,
						 cudaStream_t stream)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (count == 0)
		return cudaSuccess;
	return cudart_copy_ret(cuMemsetD8Async(DPTR(devPtr),
					       (unsigned char)value, count,
					       cudart_stream(stream)));
}

/* ---- symbols ----------------------------------------------------------- */

/* The device range of a registered variable (the runtime started). */
static cudaError_t symbol_range(const void *symbol, CUdeviceptr *dptr,
				size_t *bytes)
{
	cudaError_t err = cudart_enter();
	struct cudart_var *v;

	if (err != cudaSuccess)
		return err;
	v = cudart_registry_var(&cudart_registry_the, symbol);
	if (!v)
		return cudaErrorInvalidSymbol;
	return cudart_var_resolve(v, dptr, bytes);
}

/* dir: 1 to the symbol, 0 from it. */
static cudaError_t symbol_copy(const void *symbol, void *host, size_t count,
			       size_t offset, enum cudaMemcpyKind kind,
			       cudaStream_t stream, int sync, int to)
{
	CUdeviceptr d;
	size_t bytes;
	cudaError_t err = symbol_range(symbol, &d, &bytes);
	void *dev;

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (offset > bytes || count > bytes - offset)
		return cudart_ret(cudaErrorInvalidValue);
	if (kind == cudaMemcpyDefault)
		kind = to ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
	if (to && kind != cudaMemcpyHostToDevice &&
	    kind != cudaMemcpyDeviceToDevice)
		return cudart_ret(cudaErrorInvalidMemcpyDirection);
	if (!to && kind != cudaMemcpyDeviceToHost &&
	    kind != cudaMemcpyDeviceToDevice)
		return cudart_ret(cudaErrorInvalidMemcpyDirection);
	dev = (void *)(uintptr_t)(d + offset);
	if (to)
		return cudart_copy_ret(
			cudart_copy(dev, host, count, kind, stream, sync));
	return cudart_copy_ret(
		cudart_copy(host, dev, count, kind, stream, sync));
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpyToSymbol(const void *symbol,
						    const void *src,
						    size_t count, size_t offset,
						    enum cudaMemcpyKind kind)
{
	return symbol_copy(symbol, (void *)src, count, offset, kind, NULL, 1,
			   1);
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpyFromSymbol(void *dst,
						      const void *symbol,
						      size_t count,
						      size_t offset,
						      enum cudaMemcpyKind kind)
{
	return symbol_copy(symbol, dst, count, offset, kind, NULL, 1, 0);
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpyToSymbolAsync(
	const void *symbol, const void *src, size_t count, size_t offset,
	enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return symbol_copy(symbol, (void *)src, count, offset, kind, stream, 0,
			   1);
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpyFromSymbolAsync(
	void *dst, const void *symbol, size_t count, size_t offset,
	enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return symbol_copy(symbol, dst, count, offset, kind, stream, 0, 0);
}

CUDART_API cudaError_t CUDARTAPI cudaGetSymbolAddress(void **devPtr,
						      const void *symbol)
{
	CUdeviceptr d;
	size_t bytes;
	cudaError_t err;

	if (!devPtr)
		return cudart_ret(cudaErrorInvalidValue);
	err = symbol_range(symbol, &d, &bytes);
	if (err != cudaSuccess)
		return cudart_ret(err);
	*devPtr = (void *)(uintptr_t)d;
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI cudaGetSymbolSize(size_t *size,
						   const void *symbol)
{
	CUdeviceptr d;
	size_t bytes;
	cudaError_t err;

	if (!size)
		return cudart_ret(cudaErrorInvalidValue);
	err = symbol_range(symbol, &d, &bytes);
	if (err != cudaSuccess)
		return cudart_ret(err);
	*size = bytes;
	return cudaSuccess;
}
