// SPDX-License-Identifier: MIT
/*
 * small_calls_rt: the runtime's small calls on a vGPU.
 * cudaPointerGetAttributes tells device memory (cudaMalloc), pinned host
 * memory (cudaMallocHost: mapped at its own address where the device maps
 * host memory, as on a host; no device pointer in a VM)
 * and unknown host memory (cudaMemoryTypeUnregistered, cudaSuccess) apart;
 * one device cannot peer with itself; cache and shared memory
 * configurations are accepted hints; the profiler switches succeed;
 * stream flags and priorities read back; cudaGetDriverEntryPoint[ByVersion]
 * give our driver's functions (called here) and NULL for unknown names.
 */
/* the shared memory bank calls are deprecated in CUDA 13, still exported
 * (nvcc includes cuda_runtime.h first, so CUDA_ENABLE_DEPRECATED would
 * come too late) */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include <cuda.h>
#include <cuda_profiler_api.h>
#include <string.h>

#include "rt_check.h"

__global__ void fillValue(int *d, int n, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] = v;
}

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failures++;
}

static void pointers(void)
{
	struct cudaPointerAttributes a;
	int *d, *pinned, stack = 0, can_map = 0;

	CHECK(cudaMalloc(&d, 4096));
	CHECK(cudaMallocHost(&pinned, 4096));
	CHECK(cudaPointerGetAttributes(&a, d + 10));
	expect(a.type == cudaMemoryTypeDevice && a.device == 0 &&
		       a.devicePointer == d + 10 && !a.hostPointer,
	       "cudaMalloc'd: device memory of device 0");
	CHECK(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, 0));
	CHECK(cudaPointerGetAttributes(&a, pinned));
	/* where the device maps host memory, the runtime maps every pinned
	 * buffer, at its own address (unified addressing), as natively */
	expect(a.type == cudaMemoryTypeHost && a.device == 0 &&
		       a.hostPointer == pinned &&
		       a.devicePointer == (can_map ? pinned : NULL),
	       can_map ? "cudaMallocHost'd: host memory, mapped at its address"
		       : "cudaMallocHost'd: host memory, no device pointer");
	CHECK(cudaPointerGetAttributes(&a, &stack));
	expect(a.type == cudaMemoryTypeUnregistered && !a.devicePointer &&
		       !a.hostPointer,
	       "a stack variable: cudaMemoryTypeUnregistered, cudaSuccess");
	CHECK(cudaFreeHost(pinned));
	CHECK(cudaFree(d));
	CHECK(cudaPointerGetAttributes(&a, d));
	expect(a.type == cudaMemoryTypeUnregistered,
	       "a freed allocation: unregistered");
}

static void device_hints(void)
{
	enum cudaFuncCache cache;
	enum cudaSharedMemConfig banks;
	int can = 1, least = 1, greatest = 1;

	CHECK(cudaDeviceCanAccessPeer(&can, 0, 0));
	expect(can == 0, "cudaDeviceCanAccessPeer(0, 0): 0");
	expect(cudaDeviceCanAccessPeer(&can, 0, 1) == cudaErrorInvalidDevice,
	       "cudaDeviceCanAccessPeer(0, 1): cudaErrorInvalidDevice");
	cudaGetLastError();
	CHECK(cudaDeviceGetCacheConfig(&cache));
	expect(cache == cudaFuncCachePreferNone, "cache config: PreferNone");
	CHECK(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared));
	CHECK(cudaDeviceGetCacheConfig(&cache));
	expect(cache == cudaFuncCachePreferShared,
	       "cache config: PreferShared reads back");
	CHECK(cudaFuncSetCacheConfig(fillValue, cudaFuncCachePreferL1));
	CHECK(cudaDeviceSetSharedMemConfig(cudaSharedMemBankSizeEightByte));
	CHECK(cudaDeviceGetSharedMemConfig(&banks));
	expect(banks == cudaSharedMemBankSizeFourByte,
	       "shared memory banks: four bytes (not configurable)");
	CHECK(cudaFuncSetSharedMemConfig(fillValue,
					 cudaSharedMemBankSizeDefault));
	CHECK(cudaProfilerStart());
	CHECK(cudaProfilerStop());
	CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
	expect(least == 0 && greatest == 0, "stream priorities: [0, 0]");
}

static void streams(void)
{
	cudaStream_t s;
	unsigned int flags = 7;
	int prio = 7;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaStreamGetFlags(s, &flags));
	expect(flags == cudaStreamNonBlocking,
	       "cudaStreamGetFlags: cudaStreamNonBlocking");
	CHECK(cudaStreamGetPriority(s, &prio));
	expect(prio == 0, "cudaStreamGetPriority: 0");
	CHECK(cudaStreamGetFlags(0, &flags));
	expect(flags == cudaStreamDefault, "the NULL stream's flags: default");
	{
		enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusActive;

		CHECK(cudaStreamIsCapturing(s, &cs));
		expect(cs == cudaStreamCaptureStatusNone,
		       "cudaStreamIsCapturing outside capture: none");
	}
	CHECK(cudaStreamDestroy(s));
}

typedef CUresult (*driver_version_fn)(int *);

static void entry_points(void)
{
	enum cudaDriverEntryPointQueryResult st;
	void *fn = (void *)1;
	int v = 0, rt = 0;

	CHECK(cudaGetDriverEntryPointByVersion("cuDriverGetVersion", &fn, 12000,
					       cudaEnableDefault, &st));
	expect(fn && st == cudaDriverEntryPointSuccess,
	       "cudaGetDriverEntryPointByVersion(cuDriverGetVersion)");
	if (fn) {
		expect(((driver_version_fn)fn)(&v) == CUDA_SUCCESS &&
			       cudaDriverGetVersion(&rt) == cudaSuccess &&
			       v == rt,
		       "  ... and calling it gives cudaDriverGetVersion's "
		       "answer");
	}
	CHECK(cudaGetDriverEntryPoint("cuMemAlloc", &fn, cudaEnableDefault,
				      &st));
	expect(fn && st == cudaDriverEntryPointSuccess,
	       "cudaGetDriverEntryPoint(cuMemAlloc)");
	CHECK(cudaGetDriverEntryPointByVersion("cuNoSuchFunction", &fn, 12000,
					       cudaEnableDefault, &st));
	expect(!fn && st == cudaDriverEntryPointSymbolNotFound,
	       "an unknown name: cudaSuccess, NULL, SymbolNotFound");
	expect(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 99000,
						cudaEnableDefault,
						&st) == cudaErrorInvalidValue,
	       "a version above the driver's: cudaErrorInvalidValue");
	cudaGetLastError();
}

int main(void)
{
	struct cudaChannelFormatDesc c;

	pointers();
	device_hints();
	streams();
	entry_points();
	c = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
	expect(c.x == 32 && c.y == 0 && c.f == cudaChannelFormatKindFloat,
	       "cudaCreateChannelDesc");
	if (failures) {
		printf("small_calls_rt: FAILED (%d checks)\n", failures);
		return 1;
	}
	printf("small_calls_rt: OK\n");
	return 0;
}
