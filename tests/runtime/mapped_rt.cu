// SPDX-License-Identifier: MIT
/*
 * mapped_rt: zero-copy host memory as the CUDA samples use it:
 * canMapHostMemory, cudaSetDeviceFlags(cudaDeviceMapHost),
 * cudaHostAlloc(cudaHostAllocMapped), cudaHostGetDevicePointer, and a
 * kernel that reads its inputs from and writes its sum to host memory,
 * checked against the CPU with no copy; then the host pointer passed to
 * the kernel as it is (unified addressing).
 */
#include "rt_check.h"

/* the same kernel as vector_add_rt (its twin: kernels/rt_twins_basic.c) */
__global__ void vectorAdd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	failures += !ok;
}

int main()
{
	const int n = 1 << 16;
	const size_t bytes = n * sizeof(float);
	cudaDeviceProp prop;
	float *a, *b, *c, *da, *db, *dc;
	int ok = 1;

	CHECK(cudaGetDeviceProperties(&prop, 0));
	expect(prop.canMapHostMemory == 1, "canMapHostMemory is 1");
	CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
	CHECK(cudaHostAlloc(&a, bytes, cudaHostAllocMapped));
	CHECK(cudaHostAlloc(&b, bytes, cudaHostAllocMapped));
	CHECK(cudaHostAlloc(&c, bytes, cudaHostAllocMapped));
	for (int i = 0; i < n; i++) {
		a[i] = (float)i;
		b[i] = 2.0f * (float)i;
		c[i] = 0.0f;
	}
	CHECK(cudaHostGetDevicePointer(&da, a, 0));
	CHECK(cudaHostGetDevicePointer(&db, b, 0));
	CHECK(cudaHostGetDevicePointer(&dc, c, 0));
	vectorAdd<<<n / 256, 256>>>(da, db, dc, n);
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	for (int i = 0; i < n; i++)
		ok &= c[i] == 3.0f * (float)i;
	expect(ok, "the kernel's sum is in host memory, no copy");
	/* unified addressing: the host pointers themselves */
	vectorAdd<<<n / 256, 256>>>(c, b, a, n);
	CHECK(cudaDeviceSynchronize());
	ok = 1;
	for (int i = 0; i < n; i++)
		ok &= a[i] == 5.0f * (float)i;
	expect(ok, "host pointers passed as they are work too");
	CHECK(cudaFreeHost(a));
	CHECK(cudaFreeHost(b));
	CHECK(cudaFreeHost(c));
	if (failures) {
		printf("mapped_rt: FAILED (%d checks)\n", failures);
		return 1;
	}
	printf("mapped_rt: OK\n");
	return 0;
}
