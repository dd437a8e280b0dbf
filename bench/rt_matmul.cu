// SPDX-License-Identifier: MIT
/*
 * rt_matmul [-r REPS] [N...]: a realistic program end to end: the
 * shared-memory tiled matmul (as tests/runtime/matmul_shared_rt.cu) at each
 * N (default 512 1024 2048 4096), timed by the host clock from the copies
 * of A and B in to the copy of C out (pageable host memory, as a plain
 * program has it), median of REPS (default 5) after one warm-up run whose
 * result is checked on a sample of elements against a double-precision
 * CPU product.
 */
#include <math.h>
#include <string.h>

#include "rt_common.h"

#include "matmul_shared.cuh"

/* One end-to-end run: copies in, kernel, copy out. */
static void run_once(const float *A, const float *B, float *C, float *dA,
		     float *dB, float *dC, int n)
{
	size_t bytes = (size_t)n * n * sizeof(float);
	dim3 block(TILE, TILE);
	dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);

	CHECK(cudaMemcpy(dA, A, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(dB, B, bytes, cudaMemcpyHostToDevice));
	matmulShared<<<grid, block>>>(dA, dB, dC, n);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(C, dC, bytes, cudaMemcpyDeviceToHost));
}

/* Worst relative error over 64 sampled elements. */
static double check(const float *A, const float *B, const float *C, int n)
{
	double worst = 0;

	for (int s = 0; s < 64; s++) {
		int i = (int)((s * 7919L) % n), j = (int)((s * 104729L) % n);
		double ref = 0, mag = 0;

		for (int k = 0; k < n; k++) {
			double p = (double)A[(size_t)i * n + k] *
				   B[(size_t)k * n + j];
			ref += p;
			mag += fabs(p);
		}
		worst = fmax(worst, fabs(C[(size_t)i * n + j] - ref) /
					    (mag > 0 ? mag : 1));
	}
	return worst;
}

int main(int argc, char **argv)
{
	int sizes[32], nsizes = 0, reps = 5, failed = 0;
	double med_ms[32];
	static const int defaults[] = {512, 1024, 2048, 4096};

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-r") == 0 && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (nsizes < 32 && atoi(argv[i]) > 0)
			sizes[nsizes++] = atoi(argv[i]);
		else {
			fprintf(stderr, "usage: rt_matmul [-r REPS] [N...]\n");
			return 2;
		}
	}
	if (!nsizes)
		for (int i = 0; i < 4; i++)
			sizes[nsizes++] = defaults[i];
	if (reps < 1 || reps > 64)
		reps = 5;
	rt_banner("rt_matmul");
	printf("%-6s %14s %12s %12s\n", "n", "end-to-end ms", "GFLOP/s",
	       "max rel err");
	for (int s = 0; s < nsizes; s++) {
		int n = sizes[s];
		size_t bytes = (size_t)n * n * sizeof(float);
		float *A = (float *)malloc(bytes), *B = (float *)malloc(bytes);
		float *C = (float *)malloc(bytes), *dA, *dB, *dC;
		double t[64];

		if (!A || !B || !C) {
			fprintf(stderr, "rt_matmul: out of host memory\n");
			return 1;
		}
		srand(n);
		for (size_t i = 0; i < (size_t)n * n; i++) {
			A[i] = (float)rand() / RAND_MAX - 0.5f;
			B[i] = (float)rand() / RAND_MAX - 0.5f;
		}
		CHECK(cudaMalloc(&dA, bytes));
		CHECK(cudaMalloc(&dB, bytes));
		CHECK(cudaMalloc(&dC, bytes));
		run_once(A, B, C, dA, dB, dC, n); /* warm-up, checked */
		double err = check(A, B, C, n);
		if (!(err <= 1e-5)) {
			printf("rt_matmul: n=%d FAILED (max relative error "
			       "%.3g)\n",
			       n, err);
			failed = 1;
		}
		for (int r = 0; r < reps; r++) {
			double t0 = rt_now_us();

			run_once(A, B, C, dA, dB, dC, n);
			t[r] = (rt_now_us() - t0) / 1e3;
		}
		double ms = rt_median(t, reps);
		printf("%-6d %14.3f %12.1f %12.3g\n", n, ms,
		       2.0 * n * n * (double)n / (ms * 1e6), err);
		med_ms[s] = ms;
		CHECK(cudaFree(dA));
		CHECK(cudaFree(dB));
		CHECK(cudaFree(dC));
		free(A);
		free(B);
		free(C);
	}
	for (int s = 0; s < nsizes; s++) {
		char name[64];

		snprintf(name, sizeof(name), "matmul_e2e_%d", sizes[s]);
		rt_result(name, med_ms[s], "ms");
	}
	return failed;
}
