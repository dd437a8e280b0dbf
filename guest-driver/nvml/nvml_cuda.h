/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver calls NVML answers from: vgpu's libcuda.so.1, loaded
 * with dlopen, so that this library has no link-time tie to it and
 * nvmlInit can say NVML_ERROR_DRIVER_NOT_LOADED when there is none.
 */
#ifndef VGPU_NVML_CUDA_H
#define VGPU_NVML_CUDA_H

#include <cuda.h>

/*
 * One pointer per driver call, typed from cuda.h's prototypes. The
 * symbol looked up is the one cuda.h maps the name to (cuMemGetInfo is
 * cuMemGetInfo_v2, ...): what a program built with CUDA 13 calls.
 */
struct nvml_cuda {
	__typeof__(&cuInit) init;
	__typeof__(&cuDriverGetVersion) driver_get_version;
	__typeof__(&cuDeviceGet) device_get;
	__typeof__(&cuDeviceGetCount) device_get_count;
	__typeof__(&cuDeviceGetName) device_get_name;
	__typeof__(&cuDeviceGetUuid) device_get_uuid;
	__typeof__(&cuDeviceGetAttribute) device_get_attribute;
	__typeof__(&cuDeviceTotalMem) device_total_mem;
	__typeof__(&cuDevicePrimaryCtxRetain) primary_ctx_retain;
	__typeof__(&cuDevicePrimaryCtxRelease) primary_ctx_release;
	__typeof__(&cuCtxPushCurrent) ctx_push_current;
	__typeof__(&cuCtxPopCurrent) ctx_pop_current;
	__typeof__(&cuMemGetInfo) mem_get_info;
};

/*
 * Loads libcuda.so.1 and resolves every call, once per process (the
 * library stays loaded: CUDA cannot be shut down). NULL when it cannot
 * be loaded or lacks a call; the reason goes to stderr once.
 */
const struct nvml_cuda *nvml_cuda_get(void);

#endif /* VGPU_NVML_CUDA_H */
