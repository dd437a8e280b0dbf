/* SPDX-License-Identifier: MIT */
/*
 * cuPointerGetAttribute(s): what a pointer is, from this process's own
 * tables: device memory when it lies in one of its allocations
 * (cuMemAlloc), host memory when it lies in one of its page-locked
 * buffers (cuMemAllocHost/cuMemHostAlloc), unknown otherwise. A host
 * buffer has a device pointer, its own address, when it is mapped (on
 * a host every region is: cuda_memory.c); nothing is managed, and every
 * pointer belongs to device 0.
 */
#include <stdbool.h>
#include <string.h>

#include "client.h"
#include "client_api.h"
#include "client_ctx.h"

/* What a pointer is, found once for all the attributes asked. */
struct pointer_info {
	CUmemorytype type; /* 0: not ours */
	uint64_t base, size, id;
	int mapped; /* a host buffer the device reaches at its address */
};

static void pointer_lookup(struct client *c, CUdeviceptr ptr,
			   struct pointer_info *pi)
{
	struct client_region reg;
	struct client_alloc a;

	memset(pi, 0, sizeof(*pi));
	if (client_alloc_find(&c->allocs, ptr, &a)) {
		pi->type = CU_MEMORYTYPE_DEVICE;
		pi->base = a.base;
		pi->size = a.size;
		pi->id = a.id;
	} else if (client_region_find(&c->regions, ptr, 0, &reg)) {
		pi->type = CU_MEMORYTYPE_HOST;
		pi->base = reg.base;
		pi->size = reg.size;
		pi->id = reg.id;
		pi->mapped = reg.mapped;
	}
}

/* Bytes of the value an attribute writes; 0 for those of features a
 * vGPU lacks (memory pools, IPC handles, compression ...). */
static size_t attr_size(CUpointer_attribute a)
{
	switch (a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		return sizeof(CUcontext);
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		return sizeof(uint64_t);
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		return sizeof(size_t);
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		return sizeof(int);
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
	case CU_POINTER_ATTRIBUTE_MAPPED:
		return sizeof(unsigned int);
	default:
		return 0;
	}
}

/*
 * One attribute of a known pointer into data. CUDA_ERROR_INVALID_VALUE
 * when the pointer has no such view (a host buffer's device pointer);
 * CUDA_ERROR_NOT_SUPPORTED for attributes of features a vGPU lacks.
 */
static CUresult pointer_attr(const struct pointer_info *pi, CUdeviceptr ptr,
			     CUpointer_attribute a, void *data)
{
	bool dev = pi->type == CU_MEMORYTYPE_DEVICE;
	unsigned int u;
	uint64_t v;
	int ord = 0;

	switch (a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT: {
		/* every context of the process shares its memory */
		CUcontext ctx = client_ctx_current();

		memcpy(data, &ctx, sizeof(ctx));
		return CUDA_SUCCESS;
	}
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		u = pi->type;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		if (!dev && !pi->mapped)
			return CUDA_ERROR_INVALID_VALUE;
		v = ptr;
		memcpy(data, &v, sizeof(v));
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (dev)
			return CUDA_ERROR_INVALID_VALUE;
		v = ptr;
		memcpy(data, &v, sizeof(v));
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
		u = 0;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		u = 1;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		memcpy(data, &ord, sizeof(ord));
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		memcpy(data, &pi->base, sizeof(pi->base));
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID: /* unique for the process's life */
		memcpy(data, &pi->id, sizeof(pi->id));
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
		size_t z = (size_t)pi->size;

		memcpy(data, &z, sizeof(z));
		return CUDA_SUCCESS;
	}
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	memcpy(data, &u, sizeof(u));
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuPointerGetAttribute(void *data,
						CUpointer_attribute attribute,
						CUdeviceptr ptr)
{
	struct pointer_info pi;
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!data || !ptr)
		return CUDA_ERROR_INVALID_VALUE;
	pointer_lookup(c, ptr, &pi);
	if (!pi.type)
		return CUDA_ERROR_INVALID_VALUE; /* not CUDA's memory */
	return pointer_attr(&pi, ptr, attribute, data);
}

/* Unlike cuPointerGetAttribute, an unknown pointer (or a view it does not
 * have) is not an error: the values read 0 / NULL, as CUDA documents. */
VGPU_API CUresult CUDAAPI cuPointerGetAttributes(
	unsigned int numAttributes, CUpointer_attribute *attributes,
	void **data, CUdeviceptr ptr)
{
	struct pointer_info pi;
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (numAttributes && (!attributes || !data))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < numAttributes; i++) {
		if (!data[i])
			return CUDA_ERROR_INVALID_VALUE;
		if (!attr_size(attributes[i]))
			return CUDA_ERROR_NOT_SUPPORTED;
	}
	pointer_lookup(c, ptr, &pi);
	for (unsigned int i = 0; i < numAttributes; i++)
		if (!pi.type || pointer_attr(&pi, ptr, attributes[i],
					     data[i]) != CUDA_SUCCESS)
			memset(data[i], 0, attr_size(attributes[i]));
	return CUDA_SUCCESS;
}
