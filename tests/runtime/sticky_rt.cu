// SPDX-License-Identifier: MIT
/*
 * sticky_rt: a kernel that faults (an out-of-bounds write, kernels/
 * oob_write.cu's oobWrite) leaves a sticky error, end to end: the
 * synchronize after it fails (on a GPU cudaErrorIllegalAddress; on the
 * simulator the worker dies, cudaErrorLaunchFailure), and from then on
 * every call that needs the device returns that same error: allocation,
 * copies, launches, streams, cudaDeviceSynchronize. cudaGetLastError
 * reports it once and then, as NVIDIA's runtime keeps the last error,
 * cudaSuccess until the next failing call. cudaDeviceReset returns the
 * error too and does not clear it: on a vGPU the error means the worker
 * that ran the process's work is gone with its context, and the process
 * must start over, as CUDA says of these errors.
 */
#include "rt_check.h"

extern "C" __global__ void oobWrite(float *p, unsigned long long offset)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		p[offset] = 1.0f;
}

__global__ void fillValue(int *d, int n, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] = v;
}

static int failures;

static void same(const char *what, cudaError_t got, cudaError_t want)
{
	if (got == want) {
		printf("  ok: %s -> %s\n", what, cudaGetErrorName(got));
		return;
	}
	printf("  FAILED: %s -> %s, expected %s\n", what, cudaGetErrorName(got),
	       cudaGetErrorName(want));
	failures++;
}

int main(void)
{
	float *p;
	int *d, h[4];
	void *q = NULL;
	cudaStream_t s;
	cudaError_t err;

	CHECK(cudaMalloc(&p, 4096));
	CHECK(cudaMalloc(&d, sizeof(h)));
	oobWrite<<<1, 1>>>(p, 1ull << 42); /* 4+ TiB past p */
	err = cudaDeviceSynchronize();
	if (err != cudaErrorIllegalAddress && err != cudaErrorLaunchFailure) {
		printf("sticky_rt: FAILED: the faulting kernel gave %s\n",
		       cudaGetErrorName(err));
		return 1;
	}
	printf("  ok: the faulting kernel: %s\n", cudaGetErrorName(err));

	same("cudaGetLastError", cudaGetLastError(), err);
	same("cudaGetLastError again (it was read)", cudaGetLastError(),
	     cudaSuccess);
	same("cudaPeekAtLastError", cudaPeekAtLastError(), cudaSuccess);
	same("cudaMalloc", cudaMalloc(&q, 4096), err);
	same("cudaMemcpy H2D",
	     cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice), err);
	same("cudaMemcpy D2H",
	     cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost), err);
	same("cudaMemset", cudaMemset(d, 0, sizeof(h)), err);
	fillValue<<<1, 4>>>(d, 4, 1);
	same("a launch (cudaGetLastError)", cudaGetLastError(), err);
	same("cudaStreamCreate", cudaStreamCreate(&s), err);
	same("cudaDeviceSynchronize", cudaDeviceSynchronize(), err);
	same("cudaFree", cudaFree(d), err);
	same("cudaDeviceReset (the process must start over)", cudaDeviceReset(),
	     err);
	same("cudaGetLastError after cudaDeviceReset", cudaGetLastError(), err);
	same("cudaMalloc after cudaDeviceReset", cudaMalloc(&q, 4096), err);
	if (failures) {
		printf("sticky_rt: FAILED (%d checks)\n", failures);
		return 1;
	}
	printf("sticky_rt: OK (%s is sticky)\n", cudaGetErrorName(err));
	return 0;
}
