// SPDX-License-Identifier: MIT
/*
 * matmul_shared_rt [N]: C = A * B for N x N floats (default 256) with the
 * classic shared-memory tiled kernel (16 x 16 tiles, any N), checked
 * against a double-precision CPU product (relative to the magnitude of
 * each dot product). N = 1 .. 2048.
 */
#include <math.h>

#include "rt_check.h"

#include "matmul_shared.cuh"

/* |C[i][j] - exact| relative to sum_k |A[i][k] * B[k][j]|. */
static double rel_error(const float *A, const float *B, const float *C, int n,
			int i, int j)
{
	double ref = 0, mag = 0;

	for (int k = 0; k < n; k++) {
		double p = (double)A[(size_t)i * n + k] * B[(size_t)k * n + j];

		ref += p;
		mag += fabs(p);
	}
	return fabs(C[(size_t)i * n + j] - ref) / (mag > 0 ? mag : 1);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 256;
	double worst = 0, tol = 1e-5;
	float *A, *B, *C, *dA, *dB, *dC;
	cudaEvent_t start, stop;
	float ms = 0;

	if (n <= 0 || n > 2048) {
		fprintf(stderr, "usage: matmul_shared_rt [N in 1..2048]\n");
		return 2;
	}
	size_t bytes = (size_t)n * n * sizeof(float);
	A = (float *)malloc(bytes);
	B = (float *)malloc(bytes);
	C = (float *)malloc(bytes);
	if (!A || !B || !C) {
		fprintf(stderr, "matmul_shared_rt: out of host memory\n");
		return 1;
	}
	srand(42);
	for (size_t i = 0; i < (size_t)n * n; i++) {
		A[i] = (float)rand() / RAND_MAX - 0.5f;
		B[i] = (float)rand() / RAND_MAX - 0.5f;
	}
	CHECK(cudaMalloc(&dA, bytes));
	CHECK(cudaMalloc(&dB, bytes));
	CHECK(cudaMalloc(&dC, bytes));
	CHECK(cudaMemcpy(dA, A, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(dB, B, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaEventCreate(&start));
	CHECK(cudaEventCreate(&stop));

	dim3 block(TILE, TILE);
	dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
	CHECK(cudaEventRecord(start));
	matmulShared<<<grid, block>>>(dA, dB, dC, n);
	CHECK_LAUNCH();
	CHECK(cudaEventRecord(stop));
	CHECK(cudaEventSynchronize(stop));
	CHECK(cudaEventElapsedTime(&ms, start, stop));
	CHECK(cudaMemcpy(C, dC, bytes, cudaMemcpyDeviceToHost));

	/* every element up to 256, then a sample of rows */
	int step = n <= 256 ? 1 : n / 64;
	for (int i = 0; i < n; i += step)
		for (int j = 0; j < n; j++)
			worst = fmax(worst, rel_error(A, B, C, n, i, j));
	for (int j = 0; j < n; j++) /* the last row: edge tiles */
		worst = fmax(worst, rel_error(A, B, C, n, n - 1, j));

	CHECK(cudaEventDestroy(start));
	CHECK(cudaEventDestroy(stop));
	CHECK(cudaFree(dA));
	CHECK(cudaFree(dB));
	CHECK(cudaFree(dC));
	free(A);
	free(B);
	free(C);
	if (!(worst <= tol)) {
		printf("matmul_shared_rt: n=%d FAILED (max relative error %.3g "
		       "> %.0g)\n",
		       n, worst, tol);
		return 1;
	}
	printf("matmul_shared_rt: n=%d OK (max relative error %.3g, kernel "
	       "%.3f ms)\n",
	       n, worst, ms);
	return 0;
}
