/* SPDX-License-Identifier: MIT */
/*
 * nvmlDeviceGetMemoryInfo(_v2): the vGPU's memory. Total is its quota
 * (cuDeviceTotalMem: what vgpu-admin gave it, not the physical GPU's);
 * free is what the worker says is left of the quota (cuMemGetInfo),
 * used the rest. Nothing is set aside for the driver: reserved is 0.
 */
#include "nvml_state.h"

/*
 * cuMemGetInfo needs a current context. The caller's thread may have
 * none (NVML is often used by a monitoring thread, or before the program
 * touches CUDA): the device's primary context is retained and made
 * current only for this call, then popped and released, so the thread's
 * contexts are as they were. Retaining it is a host-side step of vgpu's
 * libcuda; the process has been a client of the vGPU since nvmlInit
 * (cuInit connects it), and this query is one request on that
 * connection.
 */
static nvmlReturn_t nvml_mem_get(const struct nvml_cuda *cu, CUdevice dev,
				 unsigned long long *total,
				 unsigned long long *left)
{
	size_t quota, avail, ctx_total;
	CUcontext ctx, popped;
	CUresult err;

	err = cu->device_total_mem(&quota, dev);
	if (err != CUDA_SUCCESS)
		return nvml_from_cuda(err);
	err = cu->primary_ctx_retain(&ctx, dev);
	if (err != CUDA_SUCCESS)
		return nvml_from_cuda(err);
	err = cu->ctx_push_current(ctx);
	if (err == CUDA_SUCCESS) {
		err = cu->mem_get_info(&avail, &ctx_total);
		cu->ctx_pop_current(&popped);
	}
	cu->primary_ctx_release(dev);
	if (err != CUDA_SUCCESS)
		return nvml_from_cuda(err);
	*total = quota;
	*left = avail < quota ? avail : quota;
	return NVML_SUCCESS;
}

/* The device checked, the out-pointer checked, then the quota and what
 * is left of it. version: the struct's version field, or NULL (v1). */
static nvmlReturn_t memory_read(nvmlDevice_t device, const void *memory,
				const unsigned int *version,
				unsigned long long *total,
				unsigned long long *left)
{
	const struct nvml_cuda *cu;
	CUdevice dev;
	nvmlReturn_t rc = nvml_device_enter(device, &cu, &dev);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (version && *version != nvmlMemory_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	return nvml_mem_get(cu, dev, total, left);
}

NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
					      nvmlMemory_t *memory)
{
	unsigned long long total, left;
	nvmlReturn_t rc = memory_read(device, memory, NULL, &total, &left);

	if (rc != NVML_SUCCESS)
		return rc;
	memory->total = total;
	memory->free = left;
	memory->used = total - left;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
						 nvmlMemory_v2_t *memory)
{
	unsigned long long total, left;
	nvmlReturn_t rc =
		memory_read(device, memory, memory ? &memory->version : NULL,
			    &total, &left);

	if (rc != NVML_SUCCESS)
		return rc;
	memory->total = total;
	memory->reserved = 0;
	memory->free = left;
	memory->used = total - left;
	return NVML_SUCCESS;
}
