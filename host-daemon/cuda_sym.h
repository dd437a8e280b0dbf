/* SPDX-License-Identifier: MIT */
/*
 * The real CUDA driver, loaded with dlopen so the worker builds and runs
 * without it (the sim backend) and never links our own guest libcuda.
 *
 * Every entry point the cuda backend uses is listed once below, by its
 * exact exported name (the _v2 names where cuda.h maps to them) and its
 * base name for cuGetProcAddress. The pointer types come from cuda.h's own
 * declarations, so a wrong signature cannot compile.
 */
#ifndef VGPU_CUDA_SYM_H
#define VGPU_CUDA_SYM_H

#include <stddef.h>

#include <cuda.h>

/* The driver version we ask cuGetProcAddress for (the cuda.h we build
 * against): it returns the ABI variant matching these declarations. */
#define CUDA_SYM_VERSION 13000

#define CUDA_SYM_LIST(X)                                                       \
	X(cuGetErrorName, "cuGetErrorName")                                    \
	X(cuInit, "cuInit")                                                    \
	X(cuDriverGetVersion, "cuDriverGetVersion")                            \
	X(cuDeviceGetCount, "cuDeviceGetCount")                                \
	X(cuDeviceGet, "cuDeviceGet")                                          \
	X(cuDeviceGetName, "cuDeviceGetName")                                  \
	X(cuDeviceGetUuid_v2, "cuDeviceGetUuid")                               \
	X(cuDeviceTotalMem_v2, "cuDeviceTotalMem")                             \
	X(cuDeviceGetAttribute, "cuDeviceGetAttribute")                        \
	X(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer")                      \
	X(cuDeviceGetDevResource, "cuDeviceGetDevResource")                    \
	X(cuDevSmResourceSplitByCount, "cuDevSmResourceSplitByCount")          \
	X(cuDevResourceGenerateDesc, "cuDevResourceGenerateDesc")              \
	X(cuGreenCtxCreate, "cuGreenCtxCreate")                                \
	X(cuGreenCtxDestroy, "cuGreenCtxDestroy")                              \
	X(cuCtxFromGreenCtx, "cuCtxFromGreenCtx")                              \
	X(cuGreenCtxGetDevResource, "cuGreenCtxGetDevResource")                \
	X(cuGreenCtxStreamCreate, "cuGreenCtxStreamCreate")                    \
	X(cuCtxSetCurrent, "cuCtxSetCurrent")                                  \
	X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity")      \
	X(cuMemAddressReserve, "cuMemAddressReserve")                          \
	X(cuMemAddressFree, "cuMemAddressFree")                                \
	X(cuMemCreate, "cuMemCreate")                                          \
	X(cuMemRelease, "cuMemRelease")                                        \
	X(cuMemMap, "cuMemMap")                                                \
	X(cuMemUnmap, "cuMemUnmap")                                            \
	X(cuMemSetAccess, "cuMemSetAccess")                                    \
	X(cuMemHostRegister_v2, "cuMemHostRegister")                           \
	X(cuMemHostUnregister, "cuMemHostUnregister")                          \
	X(cuMemHostAlloc, "cuMemHostAlloc")                                    \
	X(cuMemFreeHost, "cuMemFreeHost")                                      \
	X(cuMemHostGetDevicePointer_v2, "cuMemHostGetDevicePointer")           \
	X(cuStreamWriteValue64_v2, "cuStreamWriteValue64")                     \
	X(cuStreamWaitValue64_v2, "cuStreamWaitValue64")                       \
	X(cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync")                           \
	X(cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync")                           \
	X(cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync")                           \
	X(cuMemsetD8Async, "cuMemsetD8Async")                                  \
	X(cuMemsetD16Async, "cuMemsetD16Async")                                \
	X(cuMemsetD32Async, "cuMemsetD32Async")                                \
	X(cuLibraryLoadData, "cuLibraryLoadData")                              \
	X(cuLibraryUnload, "cuLibraryUnload")                                  \
	X(cuLibraryGetKernel, "cuLibraryGetKernel")                            \
	X(cuLibraryGetGlobal, "cuLibraryGetGlobal")                            \
	X(cuKernelGetParamInfo, "cuKernelGetParamInfo")                        \
	X(cuLaunchKernel, "cuLaunchKernel")                                    \
	X(cuLaunchKernelEx, "cuLaunchKernelEx")                                \
	X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled")                    \
	X(cuTensorMapEncodeIm2col, "cuTensorMapEncodeIm2col")                  \
	X(cuTensorMapEncodeIm2colWide, "cuTensorMapEncodeIm2colWide")          \
	X(cuTensorMapReplaceAddress, "cuTensorMapReplaceAddress")              \
	X(cuKernelGetAttribute, "cuKernelGetAttribute")                        \
	X(cuKernelSetAttribute, "cuKernelSetAttribute")                        \
	X(cuKernelGetFunction, "cuKernelGetFunction")                          \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,                \
	  "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags")              \
	X(cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters")        \
	X(cuLibraryGetKernelCount, "cuLibraryGetKernelCount")                  \
	X(cuCtxGetLimit, "cuCtxGetLimit")                                      \
	X(cuCtxSetLimit, "cuCtxSetLimit")                                      \
	X(cuLibraryEnumerateKernels, "cuLibraryEnumerateKernels")              \
	X(cuKernelGetName, "cuKernelGetName")                                  \
	X(cuOccupancyMaxPotentialClusterSize,                                  \
	  "cuOccupancyMaxPotentialClusterSize")                                \
	X(cuStreamDestroy_v2, "cuStreamDestroy")                               \
	X(cuStreamSynchronize, "cuStreamSynchronize")                          \
	X(cuStreamQuery, "cuStreamQuery")                                      \
	X(cuStreamWaitEvent, "cuStreamWaitEvent")                              \
	X(cuEventCreate, "cuEventCreate")                                      \
	X(cuEventDestroy_v2, "cuEventDestroy")                                 \
	X(cuEventRecord, "cuEventRecord")                                      \
	X(cuEventSynchronize, "cuEventSynchronize")                            \
	X(cuEventQuery, "cuEventQuery")                                        \
	X(cuEventElapsedTime_v2, "cuEventElapsedTime")

struct cuda_sym {
	void *dl; /* never closed: libcuda cannot be unloaded once used */
#define CUDA_SYM_FIELD(sym, base) __typeof__(sym) *sym;
	CUDA_SYM_LIST(CUDA_SYM_FIELD)
#undef CUDA_SYM_FIELD
};

/*
 * Load NVIDIA's libcuda.so.1 (or $VGPU_REAL_LIBCUDA) and resolve every
 * entry point. Refuses vgpu's own guest library (it exports
 * vgpu_client_library). Returns 0, or -1 with a sentence in err.
 */
int cuda_sym_load(struct cuda_sym *cs, char *err, size_t errlen);

/* "CUDA_ERROR_..." for rc, or "CUresult <n>" when the driver has no name
 * for it. buf holds the latter. */
const char *cuda_sym_error_name(const struct cuda_sym *cs, CUresult rc,
				char *buf, size_t buflen);

#endif /* VGPU_CUDA_SYM_H */
