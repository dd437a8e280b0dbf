// SPDX-License-Identifier: MIT
/*
 * per_thread_rt: built with nvcc --default-stream per-thread, so every
 * call that takes a stream links its _ptsz form and every synchronous
 * copy or fill its _ptds form (cudaMemcpyAsync_ptsz, cudaMemcpy_ptds,
 * __cudaLaunchKernel_ptsz, cudaLaunchKernelExC_ptsz, ...). Four threads
 * each run their own pipeline on their default stream (stream 0):
 * fill, launch, add, copy back, check against the CPU. A call a vGPU
 * does not support has its _ptsz/_ptds form too (cudaStreamBeginCapture_ptsz,
 * cudaMemcpy3D_ptds): cudaErrorNotSupported.
 */
#include <string.h>
#include <thread>
#include <vector>

#include "rt_check.h"

__global__ void fillPattern(int *d, int n, int base)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] = base + 2 * i;
}

__global__ void addScalar(int *d, int n, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] += v;
}

/* One thread's work on its default stream; 0 when every check passed. */
static int pipeline(int t, int n)
{
	int *d = NULL, *h = NULL, bad = 0, v = 0;
	cudaLaunchConfig_t cfg = {};
	unsigned int flags = 1;
	cudaEvent_t ev;
	cudaError_t err;

	CHECK(cudaMallocHost(&h, n * sizeof(int)));
	CHECK(cudaMalloc(&d, n * sizeof(int)));
	CHECK(cudaEventCreate(&ev));
	CHECK(cudaMemset(d, 0xff, n * sizeof(int)));
	fillPattern<<<(n + 255) / 256, 256>>>(d, n, 1000 * t);
	CHECK_LAUNCH();
	cfg.gridDim = dim3((n + 127) / 128);
	cfg.blockDim = dim3(128);
	cfg.stream = 0; /* this thread's default stream */
	CHECK(cudaLaunchKernelEx(&cfg, addScalar, d, n, t + 1));
	CHECK(cudaEventRecord(ev, 0));
	CHECK(cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost,
			      0));
	CHECK(cudaStreamSynchronize(0));
	CHECK(cudaEventSynchronize(ev));
	/* this thread's work is done; on a vGPU every thread's default
	 * stream is the one default stream, so another thread's work may
	 * still be there: cudaErrorNotReady is right too */
	err = cudaStreamQuery(0);
	if (err != cudaSuccess && err != cudaErrorNotReady)
		CHECK(err);
	for (int i = 0; i < n; i++)
		if (h[i] != 1000 * t + 2 * i + t + 1)
			bad++;
	CHECK(cudaMemsetAsync(d, 0, sizeof(int), 0));
	CHECK(cudaMemcpy(&v, d, sizeof(int), cudaMemcpyDeviceToHost));
	if (v != 0)
		bad++;
	CHECK(cudaStreamGetFlags(cudaStreamPerThread, &flags));
	if (flags != cudaStreamDefault)
		bad++;
	CHECK(cudaEventDestroy(ev));
	CHECK(cudaFree(d));
	CHECK(cudaFreeHost(h));
	printf("  %s: thread %d: %d wrong values\n", bad ? "FAILED" : "ok", t,
	       bad);
	return bad;
}

/* 0 when e is cudaErrorNotSupported, as it must be for what */
static int unsupported(const char *what, cudaError_t e)
{
	int bad = e != cudaErrorNotSupported;

	printf("  %s: %s -> %s\n", bad ? "FAILED" : "ok", what,
	       cudaGetErrorName(e));
	cudaGetLastError();
	return bad;
}

int main(void)
{
	const int threads = 4, n = 100000;
	std::vector<std::thread> pool;
	std::vector<int> bad(threads, 0);
	struct cudaMemcpy3DParms p3;
	int failures = 0;
	cudaError_t e;

	CHECK(cudaFree(0));
	for (int t = 0; t < threads; t++)
		pool.emplace_back([&bad, t, n] { bad[t] = pipeline(t, n); });
	for (auto &th : pool)
		th.join();
	for (int t = 0; t < threads; t++)
		failures += bad[t] != 0;
	/* cudaStreamBeginCapture_ptsz and cudaMemcpy3D_ptds: generated stubs */
	e = cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal);
	failures += unsupported("cudaStreamBeginCapture (per-thread)", e);
	memset(&p3, 0, sizeof(p3));
	failures += unsupported("cudaMemcpy3D (per-thread)", cudaMemcpy3D(&p3));
	if (failures) {
		printf("per_thread_rt: FAILED (%d checks)\n", failures);
		return 1;
	}
	printf("per_thread_rt: OK (%d threads on their default streams)\n",
	       threads);
	return 0;
}
