/* SPDX-License-Identifier: MIT */
/*
 * The device and its identity: how many there are (the vGPU: one), the
 * handle by index or UUID, its name, UUID, index and minor number. The
 * name and UUID are CUDA's (cuDeviceGetName, cuDeviceGetUuid), so a
 * program that matches NVML's devices to CUDA's by UUID (PyTorch does,
 * for CUDA_VISIBLE_DEVICES=GPU-...) finds the same one.
 */
#include <stdio.h>
#include <strings.h>

#include "nvml_state.h"
#include "nvml_string.h"

/* "GPU-" and the 16 bytes as 8-4-4-4-12 hex digits, NVML's form. */
#define NVML_UUID_LEN 40

static nvmlReturn_t nvml_uuid_string(const struct nvml_cuda *cu, CUdevice dev,
				     char out[NVML_UUID_LEN + 1])
{
	const unsigned char *b;
	CUuuid u;
	nvmlReturn_t rc = nvml_from_cuda(cu->device_get_uuid(&u, dev));

	if (rc != NVML_SUCCESS)
		return rc;
	b = (const unsigned char *)u.bytes;
	snprintf(out, NVML_UUID_LEN + 1,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		 b[10], b[11], b[12], b[13], b[14], b[15]);
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	const struct nvml_cuda *cu;
	nvmlReturn_t rc = nvml_enter(&cu);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!deviceCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	*deviceCount = nvml_device_count();
	return NVML_SUCCESS;
}

/* NVML 1 left out devices it had no permission for: a vGPU's client
 * has permission, so both versions count the same. */
NVML_API nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
	return nvmlDeviceGetCount_v2(deviceCount);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
						    nvmlDevice_t *device)
{
	const struct nvml_cuda *cu;
	nvmlReturn_t rc = nvml_enter(&cu);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!device || index >= nvml_device_count())
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = nvml_device_handle(index);
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index,
						 nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByIndex_v2(index, device);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid,
						nvmlDevice_t *device)
{
	char ours[NVML_UUID_LEN + 1];
	const struct nvml_cuda *cu;
	nvmlDevice_t d;
	CUdevice dev;
	nvmlReturn_t rc = nvml_enter(&cu);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!uuid || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	d = nvml_device_handle(0);
	if (!d)
		return NVML_ERROR_NOT_FOUND;
	rc = nvml_device_enter(d, &cu, &dev);
	if (rc == NVML_SUCCESS)
		rc = nvml_uuid_string(cu, dev, ours);
	if (rc != NVML_SUCCESS)
		return rc;
	if (strcasecmp(uuid, ours))
		return NVML_ERROR_NOT_FOUND;
	*device = d;
	return NVML_SUCCESS;
}

/* CUDA's name of the vGPU ("vGPU a: 16-SM slice of NVIDIA H100 ..."),
 * cut to the size NVML promises is enough for any name. */
NVML_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name,
					unsigned int length)
{
	char ours[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	const struct nvml_cuda *cu;
	CUdevice dev;
	nvmlReturn_t rc = nvml_device_enter(device, &cu, &dev);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!name)
		return NVML_ERROR_INVALID_ARGUMENT;
	rc = nvml_from_cuda(cu->device_get_name(ours, sizeof(ours), dev));
	return rc == NVML_SUCCESS ? nvml_string_put(name, length, ours) : rc;
}

NVML_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid,
					unsigned int length)
{
	char ours[NVML_UUID_LEN + 1];
	const struct nvml_cuda *cu;
	CUdevice dev;
	nvmlReturn_t rc = nvml_device_enter(device, &cu, &dev);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!uuid)
		return NVML_ERROR_INVALID_ARGUMENT;
	rc = nvml_uuid_string(cu, dev, ours);
	return rc == NVML_SUCCESS ? nvml_string_put(uuid, length, ours) : rc;
}

NVML_API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device,
					 unsigned int *index)
{
	const struct nvml_cuda *cu;
	CUdevice dev;
	nvmlReturn_t rc = nvml_device_enter(device, &cu, &dev);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!index)
		return NVML_ERROR_INVALID_ARGUMENT;
	*index = 0;
	return NVML_SUCCESS;
}

/*
 * NVIDIA's minor number names /dev/nvidiaN. A guest has no such node (its
 * device is /dev/vgpuN, one per vGPU, and a process sees one vGPU): the
 * answer is the device's index, 0.
 */
NVML_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device,
					       unsigned int *minorNumber)
{
	return nvmlDeviceGetIndex(device, minorNumber);
}
