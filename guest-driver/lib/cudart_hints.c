/* SPDX-License-Identifier: MIT */
/*
 * Runtime calls whose answer needs nothing from the vGPU: preferences
 * CUDA itself treats as hints (cache and shared memory configuration:
 * accepted, kept, reported back, never a reason for a different
 * result), the profiler switches (no profiler sees a vGPU: nothing to
 * start), peer access (one device, so no peer) and the channel
 * descriptor helper of the texture API.
 */
#include <cuda_profiler_api.h>

#include "cudart.h"

/* The device-wide preferences a program set (atomic: any thread). */
struct cudart_hints {
	int cache_config; /* enum cudaFuncCache */
};

static struct cudart_hints cudart_hints_the = {
	.cache_config = cudaFuncCachePreferNone,
};

void cudart_hints_reset(void)
{
	__atomic_store_n(&cudart_hints_the.cache_config,
			 (int)cudaFuncCachePreferNone, __ATOMIC_RELAXED);
}

CUDART_API cudaError_t CUDARTAPI
cudaDeviceSetCacheConfig(enum cudaFuncCache cacheConfig)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	if ((unsigned int)cacheConfig > cudaFuncCachePreferEqual)
		return cudart_ret(cudaErrorInvalidValue);
	__atomic_store_n(&cudart_hints_the.cache_config, (int)cacheConfig,
			 __ATOMIC_RELAXED);
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI
cudaDeviceGetCacheConfig(enum cudaFuncCache *pCacheConfig)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!pCacheConfig)
		return cudart_ret(cudaErrorInvalidValue);
	*pCacheConfig = (enum cudaFuncCache)__atomic_load_n(
		&cudart_hints_the.cache_config, __ATOMIC_RELAXED);
	return cudaSuccess;
}

/*
 * Shared memory banks are four bytes wide and not configurable on the
 * GPUs CUDA 13 supports: a valid setting is accepted with no effect and
 * the configuration reads four-byte banks, as NVIDIA's runtime does.
 */
CUDART_API cudaError_t CUDARTAPI
cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	if ((unsigned int)config > cudaSharedMemBankSizeEightByte)
		return cudart_ret(cudaErrorInvalidValue);
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI
cudaDeviceGetSharedMemConfig(enum cudaSharedMemConfig *pConfig)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!pConfig)
		return cudart_ret(cudaErrorInvalidValue);
	*pConfig = cudaSharedMemBankSizeFourByte;
	return cudaSuccess;
}

/* One device: the only candidate peer is itself, which is no peer. */
CUDART_API cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int *canAccessPeer,
							 int device,
							 int peerDevice)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!canAccessPeer)
		return cudart_ret(cudaErrorInvalidValue);
	if (device != 0 || peerDevice != 0)
		return cudart_ret(cudaErrorInvalidDevice);
	*canAccessPeer = 0;
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI cudaProfilerStart(void)
{
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI cudaProfilerStop(void)
{
	return cudaSuccess;
}

/* Pure: the descriptor the texture API would take (which a vGPU does not
 * offer; describing a format is still correct). */
CUDART_API struct cudaChannelFormatDesc CUDARTAPI
cudaCreateChannelDesc(int x, int y, int z, int w, enum cudaChannelFormatKind f)
{
	struct cudaChannelFormatDesc d = {
		.x = x, .y = y, .z = z, .w = w, .f = f};

	return d;
}
