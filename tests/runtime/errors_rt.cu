// SPDX-License-Identifier: MIT
/*
 * errors_rt [--native]: the runtime's error semantics. A launch with an
 * invalid configuration (2048 threads per block, or an empty grid) is
 * reported by cudaPeekAtLastError (which keeps it) and cudaGetLastError
 * (which clears it); an absurd cudaMalloc gives cudaErrorMemoryAllocation;
 * cudaFree of a pointer never allocated is an error; cudaMallocManaged,
 * which a vGPU does not support, fails with an error instead of crashing
 * (--native: it may succeed, as on a real GPU). None of these errors is
 * sticky: afterwards a kernel still runs correctly.
 */
#include <string.h>

#include "rt_check.h"

__global__ void fillValue(int *d, int n, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] = v;
}

static int failures;

/* expect(WHAT, GOT, WANT): one check, reported either way. */
static void expect(const char *what, cudaError_t got, cudaError_t want)
{
	if (got == want) {
		printf("  ok: %s -> %s\n", what, cudaGetErrorName(got));
		return;
	}
	printf("  FAILED: %s -> %s (%s), expected %s\n", what,
	       cudaGetErrorName(got), cudaGetErrorString(got),
	       cudaGetErrorName(want));
	failures++;
}

/*
 * A launch-configuration error: cudaErrorInvalidConfiguration, or
 * cudaErrorInvalidValue, which NVIDIA's CUDA 13 runtime reports for it
 * (the driver's CUDA_ERROR_INVALID_VALUE; measured on the H200).
 */
static void expect_config(const char *what, cudaError_t got)
{
	if (got == cudaErrorInvalidValue)
		got = cudaErrorInvalidConfiguration;
	expect(what, got, cudaErrorInvalidConfiguration);
}

/* An error, any error, then cleared by cudaGetLastError. */
static void expect_error(const char *what, cudaError_t got)
{
	if (got == cudaSuccess) {
		printf("  FAILED: %s succeeded, expected an error\n", what);
		failures++;
	} else {
		printf("  ok: %s -> %s (%s)\n", what, cudaGetErrorName(got),
		       cudaGetErrorString(got));
	}
	cudaGetLastError();
}

int main(int argc, char **argv)
{
	int native = argc > 1 && strcmp(argv[1], "--native") == 0;
	const int n = 4096;
	int *d = NULL, *h, bad = 0;
	void *p = NULL;

	h = (int *)malloc(n * sizeof(int));
	if (!h)
		return 1;
	CHECK(cudaMalloc(&d, n * sizeof(int)));
	expect("cudaGetLastError at start", cudaGetLastError(), cudaSuccess);

	fillValue<<<1, 2048>>>(d, n, 1);
	expect_config("cudaPeekAtLastError after <<<1, 2048>>>",
		      cudaPeekAtLastError());
	expect_config("cudaPeekAtLastError again (not cleared)",
		      cudaPeekAtLastError());
	expect_config("cudaGetLastError", cudaGetLastError());
	expect("cudaGetLastError again (cleared)", cudaGetLastError(),
	       cudaSuccess);

	fillValue<<<0, 256>>>(d, n, 1);
	expect_config("cudaGetLastError after <<<0, 256>>>", cudaGetLastError());

	expect("cudaMalloc(1 PiB)", cudaMalloc(&p, (size_t)1 << 50),
	       cudaErrorMemoryAllocation);
	expect("cudaGetLastError after it", cudaGetLastError(),
	       cudaErrorMemoryAllocation);
	expect("cudaGetLastError again (cleared)", cudaGetLastError(),
	       cudaSuccess);

	expect_error("cudaFree(0x1234)", cudaFree((void *)0x1234));
	expect_error("cudaFree(an address inside an allocation)",
		     cudaFree(d + 1));

	p = NULL;
	cudaError_t e = cudaMallocManaged(&p, 4096);
	if (e == cudaSuccess && native) {
		printf("  ok: cudaMallocManaged succeeded (native)\n");
		CHECK(cudaFree(p));
	} else {
		expect_error("cudaMallocManaged (unsupported on a vGPU)", e);
	}
	if (strcmp(cudaGetErrorName(cudaErrorInvalidConfiguration),
		   "cudaErrorInvalidConfiguration") != 0 ||
	    !cudaGetErrorString(cudaErrorMemoryAllocation) ||
	    !*cudaGetErrorString(cudaErrorMemoryAllocation)) {
		printf("  FAILED: cudaGetErrorName/String\n");
		failures++;
	}

	/* nothing above was sticky: the device still works */
	expect("cudaGetLastError before the last launch", cudaGetLastError(),
	       cudaSuccess);
	fillValue<<<n / 256, 256>>>(d, n, 42);
	CHECK_LAUNCH();
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		if (h[i] != 42)
			bad++;
	if (bad) {
		printf("  FAILED: the last kernel wrote %d wrong values\n",
		       bad);
		failures++;
	}
	CHECK(cudaFree(d));
	free(h);
	if (failures) {
		printf("errors_rt: FAILED (%d checks)\n", failures);
		return 1;
	}
	printf("errors_rt: OK (errors reported, cleared, not sticky)\n");
	return 0;
}
