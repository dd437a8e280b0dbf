/* SPDX-License-Identifier: MIT */
/*
 * The device: one, ordinal 0, the vGPU. Everything here is answered from
 * the description the worker sent at cuInit (VGPU_OP_GET_DEVICE_INFO),
 * read again after a resize (client_info.c), so device queries keep
 * working even after the vGPU failed and see a new SM count.
 */
#include <string.h>

#include "client.h"
#include "client_api.h"

/* The connection, the description brought up to date, and the device
 * checked; then the caller reads c->info under client_info_lock. */
CUresult client_device_enter(CUdevice dev, struct client **c)
{
	CUresult err = client_get(c);

	if (err != CUDA_SUCCESS)
		return err;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	client_info_refresh(*c);
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = 0;
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = 1;
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
	struct client *c;
	CUresult err = client_device_enter(dev, &c);
	size_t n;

	if (err != CUDA_SUCCESS)
		return err;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	client_info_lock(c);
	n = strlen(c->info.name);
	if (n > (size_t)len - 1)
		n = (size_t)len - 1;
	memcpy(name, c->info.name, n);
	client_info_unlock(c);
	name[n] = '\0';
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuDeviceGetAttribute(int *pi,
					       CUdevice_attribute attrib,
					       CUdevice dev)
{
	struct client *c;
	CUresult err = client_device_enter(dev, &c);
	const struct vgpu_device_info *info;
	int v;

	if (err != CUDA_SUCCESS)
		return err;
	if (!pi || (int)attrib < 1 || attrib >= CU_DEVICE_ATTRIBUTE_MAX ||
	    (int)attrib >= VGPU_DEVICE_ATTRS)
		return CUDA_ERROR_INVALID_VALUE;
	client_info_lock(c);
	info = &c->info;
	v = info->attrs[attrib];
	/* where the worker left an attribute it also states elsewhere */
	if (v == 0) {
		if (attrib == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
			v = (int)info->sm_count;
		else if (attrib == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
			v = (int)info->cc_major;
		else if (attrib == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
			v = (int)info->cc_minor;
	}
	/* stream-ordered pools are the guest's own (client_pool.c), none
	 * shared with other processes */
	if (attrib == CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
		v = 1;
	/* cooperative launches go through a host that speaks of them */
	else if (attrib == CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)
		v = c->transport.minor >= VGPU_PROTO_MINOR_COOPERATIVE;
	else if (attrib == CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH)
		v = 0; /* one device; the multi-device launch is refused */
	else if (attrib == CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)
		v = 0;
	/* the worker's GPU may map host memory; a VM cannot (cuda_memory.c) */
	if (attrib == CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)
		v = v && client_can_map_host(c);
	client_info_unlock(c);
	*pi = v;
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	struct client *c;
	CUresult err = client_device_enter(dev, &c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	client_info_lock(c);
	*bytes = (size_t)c->info.memory_quota;
	client_info_unlock(c);
	return CUDA_SUCCESS;
}

/* cuDeviceGetUuid of cuda.h 13 is cuDeviceGetUuid_v2; the plain name
 * (same arguments) is in cuda_compat.c. */
VGPU_API CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	struct client *c;
	CUresult err = client_device_enter(dev, &c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	client_info_lock(c);
	memcpy(uuid->bytes, c->info.uuid, sizeof(uuid->bytes));
	client_info_unlock(c);
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuDeviceComputeCapability(int *major, int *minor,
						    CUdevice dev)
{
	struct client *c;
	CUresult err = client_device_enter(dev, &c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!major || !minor)
		return CUDA_ERROR_INVALID_VALUE;
	client_info_lock(c);
	*major = (int)c->info.cc_major;
	*minor = (int)c->info.cc_minor;
	client_info_unlock(c);
	return CUDA_SUCCESS;
}

/* A vGPU is the process's only device: it has no peer. */
VGPU_API CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer,
						CUdevice dev, CUdevice peerDev)
{
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!canAccessPeer)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0 || peerDev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*canAccessPeer = 0;
	return CUDA_SUCCESS;
}
