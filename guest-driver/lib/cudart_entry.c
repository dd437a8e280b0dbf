/* SPDX-License-Identifier: MIT */
/*
 * cudaGetDriverEntryPoint[ByVersion][_ptsz]: a driver function by name,
 * through our driver's cuGetProcAddress (cuda_proc.c), so a program gets
 * our libcuda's function, never NVIDIA's. The _ptsz forms (programs built
 * with --default-stream per-thread) differ only in what cudaEnableDefault
 * means: the per-thread-default-stream variant of the function.
 */
#include <stdint.h>

#include "cudart.h"

/* Driver flags for a runtime request; -1 for flags CUDA does not know. */
static long long entry_flags(unsigned long long flags, int per_thread)
{
	switch (flags) {
	case cudaEnableDefault:
		return per_thread
			       ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
			       : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
	case cudaEnableLegacyStream:
		return CU_GET_PROC_ADDRESS_LEGACY_STREAM;
	case cudaEnablePerThreadDefaultStream:
		return CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	}
	return -1;
}

/*
 * As CUDA documents: a symbol that is not found, or only in versions
 * newer than cudaVersion, is cudaSuccess with *funcPtr NULL and the
 * reason in *driverStatus; a cudaVersion above the driver's is
 * cudaErrorInvalidValue.
 */
static cudaError_t
entry_point(const char *symbol, void **funcPtr, unsigned int cudaVersion,
	    unsigned long long flags,
	    enum cudaDriverEntryPointQueryResult *driverStatus, int per_thread)
{
	CUdriverProcAddressQueryResult st =
		CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	long long cuflags = entry_flags(flags, per_thread);
	cudaError_t err = cudart_enter();
	int driver = 0;
	CUresult res;

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!symbol || !funcPtr || cuflags < 0)
		return cudart_ret(cudaErrorInvalidValue);
	res = cuDriverGetVersion(&driver);
	if (res != CUDA_SUCCESS)
		return cudart_ret_cu(res);
	if (driver < 0 || cudaVersion > (unsigned int)driver)
		return cudart_ret(cudaErrorInvalidValue);
	res = cuGetProcAddress(symbol, funcPtr, (int)cudaVersion,
			       (cuuint64_t)cuflags, &st);
	if (driverStatus)
		*driverStatus = (enum cudaDriverEntryPointQueryResult)st;
	if (res == CUDA_ERROR_NOT_FOUND) {
		*funcPtr = NULL;
		return cudaSuccess;
	}
	return cudart_ret_cu(res);
}

CUDART_API cudaError_t CUDARTAPI cudaGetDriverEntryPoint(
	const char *symbol, void **funcPtr, unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus,
			   0);
}

CUDART_API cudaError_t CUDARTAPI cudaGetDriverEntryPoint_ptsz(
	const char *symbol, void **funcPtr, unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus,
			   1);
}

CUDART_API cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(
	const char *symbol, void **funcPtr, unsigned int cudaVersion,
	unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus,
			   0);
}

CUDART_API cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(
	const char *symbol, void **funcPtr, unsigned int cudaVersion,
	unsigned long long flags,
	enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus,
			   1);
}
