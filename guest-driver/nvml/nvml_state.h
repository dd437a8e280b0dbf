/* SPDX-License-Identifier: MIT */
/*
 * The library's one piece of state: how many nvmlInit calls are not yet
 * shut down, and the device handle it gives out (the vGPU). Every API
 * call enters through nvml_enter or nvml_device_enter, which say
 * NVML_ERROR_UNINITIALIZED before nvmlInit (and after the last
 * nvmlShutdown) and NVML_ERROR_INVALID_ARGUMENT for a handle this
 * library did not give out.
 */
#ifndef VGPU_NVML_STATE_H
#define VGPU_NVML_STATE_H

#include "nvml.h"
#include "nvml_cuda.h"

/* What the library exports; everything else is hidden. */
#define NVML_API __attribute__((visibility("default")))

/* The driver calls, when NVML is initialised; else UNINITIALIZED. */
nvmlReturn_t nvml_enter(const struct nvml_cuda **cu);

/*
 * As nvml_enter, and device must be the handle nvmlDeviceGetHandleBy*
 * gave out (else INVALID_ARGUMENT); *dev is its CUDA device.
 */
nvmlReturn_t nvml_device_enter(nvmlDevice_t device, const struct nvml_cuda **cu,
			       CUdevice *dev);

/* How many devices NVML shows: 1 (the vGPU), or 0 when it was
 * initialised with NVML_INIT_FLAG_NO_GPUS and there is no vGPU. */
unsigned int nvml_device_count(void);

/* The handle of device index (< nvml_device_count()). */
nvmlDevice_t nvml_device_handle(unsigned int index);

/* A CUDA driver error as the NVML error closest to it (nvml_error.c). */
nvmlReturn_t nvml_from_cuda(CUresult err);

#endif /* VGPU_NVML_STATE_H */
