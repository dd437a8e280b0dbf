// SPDX-License-Identifier: MIT
/*
 * device_reset_rt: cudaDeviceReset destroys what the process had on the
 * device, as CUDA documents. Before it: most of the vGPU's memory
 * allocated (a second allocation as large fails), streams, events,
 * pinned host memory, a loaded module and a cache preference. After it:
 * cudaMemGetInfo shows the memory back and the same allocation succeeds;
 * the old handles are errors, not crashes (natively some crash: a vGPU's
 * driver checks every handle); the preference is reset; and the kernel,
 * registered at start-up, runs again correctly (CPU check): NVIDIA's
 * runtime keeps launching it through its library, which a reset leaves
 * (libraries are context-independent).
 */
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

/* fillValue over n ints, read back, every value v? */
static int fill_and_check(int n, int v)
{
	int *d, *h, bad = 0;

	h = (int *)malloc(n * sizeof(int));
	if (!h)
		exit(1);
	CHECK(cudaMalloc(&d, n * sizeof(int)));
	fillValue<<<(n + 255) / 256, 256>>>(d, n, v);
	CHECK_LAUNCH();
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		bad += h[i] != v;
	CHECK(cudaFree(d));
	free(h);
	return bad == 0;
}

int main(void)
{
	size_t free0, free1, free2, total, big;
	enum cudaFuncCache cache;
	cudaStream_t s1, s2;
	cudaEvent_t e1, e2;
	void *p, *q = NULL, *pinned;
	cudaError_t err;

	CHECK(cudaMemGetInfo(&free0, &total));
	big = free0 / 4 * 3 & ~(((size_t)1 << 20) - 1);
	CHECK(cudaMalloc(&p, big));
	expect(cudaMalloc(&q, big) == cudaErrorMemoryAllocation,
	       "a second allocation of 3/4 of the memory does not fit");
	cudaGetLastError();
	CHECK(cudaStreamCreate(&s1));
	CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CHECK(cudaEventCreate(&e1));
	CHECK(cudaEventCreate(&e2));
	CHECK(cudaMallocHost(&pinned, 1 << 20));
	CHECK(cudaEventRecord(e1, s1));
	expect(fill_and_check(10000, 3), "the kernel runs before the reset");
	CHECK(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared));
	CHECK(cudaMemGetInfo(&free1, &total));
	printf("  free: %zu MiB at start, %zu MiB before the reset\n",
	       free0 >> 20, free1 >> 20);
	fillValue<<<1, 2048>>>((int *)p, 1, 0); /* a launch error */
	err = cudaGetLastError();
	expect(err == cudaErrorInvalidValue ||
		       err == cudaErrorInvalidConfiguration,
	       "a block of 2048 threads is a launch error");

	CHECK(cudaDeviceReset());
	CHECK(cudaMemGetInfo(&free2, &total));
	printf("  free after the reset: %zu MiB\n", free2 >> 20);
	expect(free2 >= free0, "cudaMemGetInfo: all the memory is back");
	CHECK(cudaDeviceGetCacheConfig(&cache));
	expect(cache == cudaFuncCachePreferNone,
	       "the cache preference is back to PreferNone");
	expect(cudaStreamSynchronize(s1) != cudaSuccess,
	       "an old stream is an error (not a crash)");
	cudaGetLastError();
	expect(cudaEventQuery(e2) != cudaSuccess,
	       "an old event is an error (not a crash)");
	cudaGetLastError();
	expect(cudaFreeHost(pinned) != cudaSuccess,
	       "old pinned memory is gone: cudaFreeHost is an error");
	cudaGetLastError();
	expect(cudaFree(p) != cudaSuccess,
	       "an old allocation is gone: cudaFree is an error");
	cudaGetLastError();
	CHECK(cudaMalloc(&q, big));
	expect(1, "the large allocation succeeds again");
	expect(fill_and_check(10000, 9),
	       "the kernel is loaded again and runs correctly");
	CHECK(cudaFree(q));
	if (failures) {
		printf("device_reset_rt: FAILED (%d checks)\n", failures);
		return 1;
	}
	printf("device_reset_rt: OK\n");
	return 0;
}
