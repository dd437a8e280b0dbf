/* SPDX-License-Identifier: MIT */
/*
 * nvmlInit, nvmlShutdown and the checks every call starts with
 * (nvml_state.h).
 *
 * nvmlInit initialises CUDA (cuInit of vgpu's libcuda.so.1), which
 * connects the process to its vGPU: from then on the process is one of
 * the vGPU's clients, as after any CUDA call, and a child it forks
 * cannot use CUDA (nor NVML), as with NVIDIA's driver after cuInit.
 * nvmlShutdown only counts down: CUDA has no way back, and the
 * connection closes when the process exits.
 */
#include <pthread.h>

#include "nvml_state.h"

/* The handle given out: the address of the one device there is. */
struct nvmlDevice_st {
	CUdevice dev;
};

static struct nvmlDevice_st nvml_the_device;
static pthread_mutex_t nvml_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int nvml_refs;	/* nvmlInit calls not yet shut down */
static unsigned int nvml_count; /* devices shown: 0 or 1 */
static const struct nvml_cuda *nvml_cu;

/*
 * Loads the driver and brings CUDA up. Without a vGPU (no driver, or
 * cuInit fails: the driver said why on stderr) that is
 * NVML_ERROR_DRIVER_NOT_LOADED, unless the caller asked for no GPUs
 * (NVML_INIT_FLAG_NO_GPUS): then NVML runs with none.
 */
static nvmlReturn_t nvml_start(unsigned int flags)
{
	const struct nvml_cuda *cu = nvml_cuda_get();
	int n = 0;

	if (!cu)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	nvml_cu = cu;
	nvml_count = 0;
	if (cu->init(0) != CUDA_SUCCESS ||
	    cu->device_get_count(&n) != CUDA_SUCCESS || n < 1 ||
	    cu->device_get(&nvml_the_device.dev, 0) != CUDA_SUCCESS)
		return (flags & NVML_INIT_FLAG_NO_GPUS)
			       ? NVML_SUCCESS
			       : NVML_ERROR_DRIVER_NOT_LOADED;
	nvml_count = 1; /* a vGPU is the only device its driver shows */
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
	nvmlReturn_t rc = NVML_SUCCESS;

	pthread_mutex_lock(&nvml_lock);
	if (nvml_refs == 0)
		rc = nvml_start(flags);
	if (rc == NVML_SUCCESS)
		__atomic_add_fetch(&nvml_refs, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&nvml_lock);
	return rc;
}

NVML_API nvmlReturn_t nvmlInit_v2(void)
{
	return nvmlInitWithFlags(0);
}

/* NVML 1's nvmlInit: the same (it differed in devices it could not
 * open, and a vGPU's is always open). */
NVML_API nvmlReturn_t nvmlInit(void)
{
	return nvmlInitWithFlags(0);
}

NVML_API nvmlReturn_t nvmlShutdown(void)
{
	nvmlReturn_t rc = NVML_SUCCESS;

	pthread_mutex_lock(&nvml_lock);
	if (nvml_refs == 0)
		rc = NVML_ERROR_UNINITIALIZED;
	else
		__atomic_sub_fetch(&nvml_refs, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&nvml_lock);
	return rc;
}

nvmlReturn_t nvml_enter(const struct nvml_cuda **cu)
{
	if (__atomic_load_n(&nvml_refs, __ATOMIC_ACQUIRE) == 0)
		return NVML_ERROR_UNINITIALIZED;
	*cu = nvml_cu;
	return NVML_SUCCESS;
}

nvmlReturn_t nvml_device_enter(nvmlDevice_t device, const struct nvml_cuda **cu,
			       CUdevice *dev)
{
	nvmlReturn_t rc = nvml_enter(cu);

	if (rc != NVML_SUCCESS)
		return rc;
	if (device != &nvml_the_device || nvml_count == 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	*dev = device->dev;
	return NVML_SUCCESS;
}

unsigned int nvml_device_count(void)
{
	return nvml_count;
}

nvmlDevice_t nvml_device_handle(unsigned int index)
{
	return index < nvml_count ? &nvml_the_device : NULL;
}
