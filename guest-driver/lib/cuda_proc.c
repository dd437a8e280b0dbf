/* SPDX-License-Identifier: MIT */
/*
 * cuGetProcAddress: our function for a driver symbol name (without
 * version suffix), as cudart and cuda.h's typedefs (cudaTypedefs.h) ask
 * for it: each name may have several versions, each introduced with a
 * CUDA version; the newest one not newer than the caller's cudaVersion
 * wins, and with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the
 * per-thread-stream variant where there is one. Versions come from
 * cudaTypedefs.h (PFN_<name>_v<version>).
 */
#define __CUDA_API_VERSION_INTERNAL 1

#include <string.h>

#include "client_api.h"

struct proc_entry {
	const char *name;
	int version; /* the CUDA version that introduced this variant */
	int ptds;    /* the per-thread-default-stream variant */
	void *fn;
};

#define P(n, v, f)                                                             \
	{                                                                      \
		n, v, 0, (void *)(f)                                           \
	}
#define T(n, v, f)                                                             \
	{                                                                      \
		n, v, 1, (void *)(f)                                           \
	}

static const struct proc_entry proc_table[] = {
	P("cuGetErrorString", 6000, cuGetErrorString),
	P("cuGetErrorName", 6000, cuGetErrorName),
	P("cuInit", 2000, cuInit),
	P("cuDriverGetVersion", 2020, cuDriverGetVersion),
	P("cuGetProcAddress", 11030, cuGetProcAddress),
	P("cuGetProcAddress", 12000, cuGetProcAddress_v2),

	P("cuDeviceGet", 2000, cuDeviceGet),
	P("cuDeviceGetCount", 2000, cuDeviceGetCount),
	P("cuDeviceGetName", 2000, cuDeviceGetName),
	P("cuDeviceGetUuid", 9020, cuDeviceGetUuid),
	P("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2),
	P("cuDeviceTotalMem", 2000, cuDeviceTotalMem),
	P("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
	P("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
	P("cuDeviceComputeCapability", 2000, cuDeviceComputeCapability),
	P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
	P("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
	P("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
	P("cuDevicePrimaryCtxSetFlags", 7000, cuDevicePrimaryCtxSetFlags),
	P("cuDevicePrimaryCtxSetFlags", 11000, cuDevicePrimaryCtxSetFlags_v2),
	P("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState),
	P("cuDevicePrimaryCtxReset", 7000, cuDevicePrimaryCtxReset),
	P("cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2),

	P("cuCtxCreate", 2000, cuCtxCreate),
	P("cuCtxCreate", 3020, cuCtxCreate_v2),
	P("cuCtxCreate", 11040, cuCtxCreate_v3),
	P("cuCtxCreate", 12050, cuCtxCreate_v4),
	P("cuCtxDestroy", 2000, cuCtxDestroy),
	P("cuCtxDestroy", 4000, cuCtxDestroy_v2),
	P("cuCtxPushCurrent", 2000, cuCtxPushCurrent),
	P("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
	P("cuCtxPopCurrent", 2000, cuCtxPopCurrent),
	P("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
	P("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
	P("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
	P("cuCtxGetDevice", 2000, cuCtxGetDevice),
	P("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
	P("cuCtxSynchronize", 2000, cuCtxSynchronize),
	P("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),

	P("cuMemGetInfo", 2000, cuMemGetInfo),
	P("cuMemGetInfo", 3020, cuMemGetInfo_v2),
	P("cuMemAlloc", 3020, cuMemAlloc_v2),
	P("cuMemFree", 3020, cuMemFree_v2),
	P("cuMemAllocHost", 2000, cuMemAllocHost),
	P("cuMemAllocHost", 3020, cuMemAllocHost_v2),
	P("cuMemHostAlloc", 2020, cuMemHostAlloc),
	P("cuMemFreeHost", 2000, cuMemFreeHost),
	P("cuMemcpy", 4000, cuMemcpy),
	T("cuMemcpy", 7000, cuMemcpy_ptds),
	P("cuMemcpyAsync", 4000, cuMemcpyAsync),
	T("cuMemcpyAsync", 7000, cuMemcpyAsync_ptsz),
	P("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
	T("cuMemcpyHtoD", 7000, cuMemcpyHtoD_v2_ptds),
	P("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
	T("cuMemcpyDtoH", 7000, cuMemcpyDtoH_v2_ptds),
	P("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2),
	T("cuMemcpyDtoD", 7000, cuMemcpyDtoD_v2_ptds),
	P("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
	T("cuMemcpyHtoDAsync", 7000, cuMemcpyHtoDAsync_v2_ptsz),
	P("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
	T("cuMemcpyDtoHAsync", 7000, cuMemcpyDtoHAsync_v2_ptsz),
	P("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2),
	T("cuMemcpyDtoDAsync", 7000, cuMemcpyDtoDAsync_v2_ptsz),
	P("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
	P("cuPointerGetAttributes", 7000, cuPointerGetAttributes),
	P("cuMemsetD8", 3020, cuMemsetD8_v2),
	T("cuMemsetD8", 7000, cuMemsetD8_v2_ptds),
	P("cuMemsetD16", 3020, cuMemsetD16_v2),
	T("cuMemsetD16", 7000, cuMemsetD16_v2_ptds),
	P("cuMemsetD32", 3020, cuMemsetD32_v2),
	T("cuMemsetD32", 7000, cuMemsetD32_v2_ptds),
	P("cuMemsetD8Async", 3020, cuMemsetD8Async),
	T("cuMemsetD8Async", 7000, cuMemsetD8Async_ptsz),
	P("cuMemsetD16Async", 3020, cuMemsetD16Async),
	T("cuMemsetD16Async", 7000, cuMemsetD16Async_ptsz),
	P("cuMemsetD32Async", 3020, cuMemsetD32Async),
	T("cuMemsetD32Async", 7000, cuMemsetD32Async_ptsz),

	P("cuModuleLoad", 2000, cuModuleLoad),
	P("cuModuleLoadData", 2000, cuModuleLoadData),
	P("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
	P("cuModuleLoadFatBinary", 2000, cuModuleLoadFatBinary),
	P("cuModuleUnload", 2000, cuModuleUnload),
	P("cuModuleGetFunction", 2000, cuModuleGetFunction),
	P("cuModuleGetGlobal", 3020, cuModuleGetGlobal_v2),
	P("cuLibraryLoadData", 12000, cuLibraryLoadData),
	P("cuLibraryUnload", 12000, cuLibraryUnload),
	P("cuLibraryGetKernel", 12000, cuLibraryGetKernel),
	P("cuLibraryGetGlobal", 12000, cuLibraryGetGlobal),
	P("cuKernelGetFunction", 12000, cuKernelGetFunction),
	P("cuLaunchKernel", 4000, cuLaunchKernel),
	T("cuLaunchKernel", 7000, cuLaunchKernel_ptsz),

	P("cuStreamCreate", 2000, cuStreamCreate),
	P("cuStreamDestroy", 2000, cuStreamDestroy),
	P("cuStreamDestroy", 4000, cuStreamDestroy_v2),
	P("cuStreamQuery", 2000, cuStreamQuery),
	T("cuStreamQuery", 7000, cuStreamQuery_ptsz),
	P("cuStreamSynchronize", 2000, cuStreamSynchronize),
	T("cuStreamSynchronize", 7000, cuStreamSynchronize_ptsz),
	P("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
	T("cuStreamWaitEvent", 7000, cuStreamWaitEvent_ptsz),
	P("cuStreamGetFlags", 5050, cuStreamGetFlags),
	P("cuStreamGetPriority", 5050, cuStreamGetPriority),

	P("cuEventCreate", 2000, cuEventCreate),
	P("cuEventRecord", 2000, cuEventRecord),
	T("cuEventRecord", 7000, cuEventRecord_ptsz),
	P("cuEventQuery", 2000, cuEventQuery),
	P("cuEventSynchronize", 2000, cuEventSynchronize),
	P("cuEventDestroy", 2000, cuEventDestroy),
	P("cuEventDestroy", 4000, cuEventDestroy_v2),
	P("cuEventElapsedTime", 2000, cuEventElapsedTime),
	P("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
};

#define PROC_COUNT (sizeof(proc_table) / sizeof(proc_table[0]))

/*
 * Works before cuInit, as cudart needs. Unknown names give
 * CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND; a name
 * whose every version is newer than cudaVersion gives
 * CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT.
 */
VGPU_API CUresult CUDAAPI cuGetProcAddress_v2(
	const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
	CUdriverProcAddressQueryResult *symbolStatus)
{
	const cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM |
				 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	const struct proc_entry *best = NULL, *best_ptds = NULL;
	int ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	int named = 0;

	if (pfn)
		*pfn = NULL;
	if (!symbol || !pfn || (flags & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < PROC_COUNT; i++) {
		const struct proc_entry *e = &proc_table[i];

		if (strcmp(e->name, symbol) != 0)
			continue;
		named = 1;
		if (e->version > cudaVersion)
			continue;
		if (e->ptds) {
			if (!best_ptds || e->version > best_ptds->version)
				best_ptds = e;
		} else if (!best || e->version > best->version) {
			best = e;
		}
	}
	if (ptds && best_ptds)
		best = best_ptds;
	if (!best) {
		if (symbolStatus && named)
			*symbolStatus =
				CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
		else if (symbolStatus)
			*symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return CUDA_ERROR_NOT_FOUND;
	}
	*pfn = best->fn;
	if (symbolStatus)
		*symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
	return CUDA_SUCCESS;
}
