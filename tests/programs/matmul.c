/* SPDX-License-Identifier: MIT */
/*
 * matmul [n]: C = A * B for n x n random floats with the 16x16-tiled
 * kernel (default n = 256; any n, the edge tiles are padded). Checked
 * against a double-precision CPU product: every element for n <= 512,
 * a random sample of 4096 elements above that (so a GPU machine can run
 * n = 8192 without an hour of CPU). Loads its kernel with
 * cuLibraryLoadData and launches the CUkernel.
 */
#include <math.h>

#include "prog.h"

#define TILE 16

/* Relative error of element (i, j) against a double-precision dot. */
static double rel_error(const float *A, const float *B, const float *C, int n,
			int i, int j)
{
	double ref = 0, mag = 0;

	for (int k = 0; k < n; k++) {
		ref += (double)A[(size_t)i * n + k] * B[(size_t)k * n + j];
		mag += fabs((double)A[(size_t)i * n + k] *
			    B[(size_t)k * n + j]);
	}
	return fabs(C[(size_t)i * n + j] - ref) / (mag > 0 ? mag : 1);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 256;
	unsigned long long seed = 2;
	double worst = 0, tol = 1e-4;
	CUdeviceptr dA, dB, dC;
	CUevent start, stop;
	CUlibrary lib;
	CUkernel kern;
	CUdevice dev;
	float *A, *B, *C, ms;
	void *image;
	size_t bytes;
	int grid;

	if (n <= 0) {
		fprintf(stderr, "usage: matmul [n > 0]\n");
		return 2;
	}
	bytes = (size_t)n * n * sizeof(float);
	A = malloc(bytes);
	B = malloc(bytes);
	C = malloc(bytes);
	if (!A || !B || !C) {
		fprintf(stderr, "matmul: out of host memory\n");
		return 1;
	}
	for (size_t i = 0; i < (size_t)n * n; i++) {
		A[i] = prog_rand_float(&seed);
		B[i] = prog_rand_float(&seed);
	}

	prog_init(&dev);
	image = prog_read_cubin("matmul_tiled");
	CHECK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
	free(image);
	CHECK(cuLibraryGetKernel(&kern, lib, "matmulTiled"));
	CHECK(cuMemAlloc(&dA, bytes));
	CHECK(cuMemAlloc(&dB, bytes));
	CHECK(cuMemAlloc(&dC, bytes));
	CHECK(cuMemcpyHtoD(dA, A, bytes));
	CHECK(cuMemcpyHtoD(dB, B, bytes));
	CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));

	void *params[] = {&dA, &dB, &dC, &n};
	grid = (n + TILE - 1) / TILE;
	CHECK(cuEventRecord(start, NULL));
	CHECK(cuLaunchKernel((CUfunction)kern, grid, grid, 1, TILE, TILE, 1, 0,
			     NULL, params, NULL));
	CHECK(cuEventRecord(stop, NULL));
	CHECK(cuEventSynchronize(stop));
	CHECK(cuEventElapsedTime(&ms, start, stop));
	CHECK(cuMemcpyDtoH(C, dC, bytes));

	if (n <= 512) {
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++)
				worst = fmax(worst,
					     rel_error(A, B, C, n, i, j));
	} else {
		for (int s = 0; s < 4096; s++) {
			int i = prog_rand(&seed) % n, j = prog_rand(&seed) % n;

			worst = fmax(worst, rel_error(A, B, C, n, i, j));
		}
	}

	CHECK(cuEventDestroy(start));
	CHECK(cuEventDestroy(stop));
	CHECK(cuMemFree(dA));
	CHECK(cuMemFree(dB));
	CHECK(cuMemFree(dC));
	CHECK(cuLibraryUnload(lib));
	prog_fini(dev);
	free(A);
	free(B);
	free(C);
	if (!(worst <= tol)) {
		printf("matmul: n=%d FAILED (max relative error %.3g > %.0g)\n",
		       n, worst, tol);
		return 1;
	}
	printf("matmul: n=%d OK (max relative error %.3g, kernel %.3f ms)\n", n,
	       worst, ms);
	return 0;
}
