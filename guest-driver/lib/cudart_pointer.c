/* SPDX-License-Identifier: MIT */
/*
 * cudaPointerGetAttributes, from our driver's cuPointerGetAttributes
 * (cuda_pointer.c), which knows this process's allocations and
 * page-locked buffers:
 *  - cudaMalloc'd memory: cudaMemoryTypeDevice on device 0, devicePointer
 *    the pointer itself, no host pointer;
 *  - cudaMallocHost/cudaHostAlloc memory: cudaMemoryTypeHost on device 0,
 *    hostPointer the pointer, and no devicePointer: the vGPU cannot
 *    address host memory (CUDA gives NULL when "the current device cannot
 *    access it directly");
 *  - anything else: cudaMemoryTypeUnregistered and cudaSuccess, as since
 *    CUDA 11, device cudaInvalidDeviceId and both pointers NULL.
 */
#include <stdint.h>
#include <string.h>

#include "cudart.h"

CUDART_API cudaError_t CUDARTAPI cudaPointerGetAttributes(
	struct cudaPointerAttributes *attributes, const void *ptr)
{
	CUpointer_attribute want[] = {
		CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
		CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
		CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
		CU_POINTER_ATTRIBUTE_HOST_POINTER,
	};
	unsigned int type = 0;
	int ordinal = 0;
	CUdeviceptr dev = 0;
	void *host = NULL;
	void *data[] = {&type, &ordinal, &dev, &host};
	cudaError_t err = cudart_enter();
	CUresult res;

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!attributes)
		return cudart_ret(cudaErrorInvalidValue);
	res = cuPointerGetAttributes(sizeof(want) / sizeof(want[0]), want, data,
				     (CUdeviceptr)(uintptr_t)ptr);
	if (res != CUDA_SUCCESS)
		return cudart_ret_cu(res);
	memset(attributes, 0, sizeof(*attributes));
	switch (type) {
	case CU_MEMORYTYPE_DEVICE:
		attributes->type = cudaMemoryTypeDevice;
		break;
	case CU_MEMORYTYPE_HOST:
		attributes->type = cudaMemoryTypeHost;
		break;
	default:
		attributes->type = cudaMemoryTypeUnregistered;
		attributes->device = cudaInvalidDeviceId;
		return cudaSuccess;
	}
	attributes->device = ordinal;
	attributes->devicePointer = (void *)(uintptr_t)dev;
	attributes->hostPointer = host;
	return cudaSuccess;
}
