// SPDX-License-Identifier: MIT
/*
 * vector_add_rt [N]: c = a + b on the device with cudaMalloc, cudaMemcpy
 * and a <<<>>> launch, checked element by element against the CPU.
 */
#include "rt_check.h"

__global__ void vectorAdd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
	size_t bytes = (size_t)n * sizeof(float);
	float *a, *b, *c, *da, *db, *dc;
	int bad = 0;

	if (n <= 0) {
		fprintf(stderr, "usage: vector_add_rt [N > 0]\n");
		return 2;
	}
	a = (float *)malloc(bytes);
	b = (float *)malloc(bytes);
	c = (float *)malloc(bytes);
	if (!a || !b || !c) {
		fprintf(stderr, "vector_add_rt: out of host memory\n");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		a[i] = (float)(i % 1000) * 0.5f;
		b[i] = (float)(i % 777) * 0.25f;
	}
	CHECK(cudaMalloc(&da, bytes));
	CHECK(cudaMalloc(&db, bytes));
	CHECK(cudaMalloc(&dc, bytes));
	CHECK(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemset(dc, 0xff, bytes));

	int threads = 256, blocks = (n + threads - 1) / threads;
	vectorAdd<<<blocks, threads>>>(da, db, dc, n);
	CHECK_LAUNCH();
	CHECK(cudaMemcpy(c, dc, bytes, cudaMemcpyDeviceToHost));

	for (int i = 0; i < n; i++) {
		if (c[i] != a[i] + b[i]) {
			if (bad++ < 5)
				fprintf(stderr, "c[%d] = %g, expected %g\n", i,
					c[i], a[i] + b[i]);
		}
	}
	CHECK(cudaFree(da));
	CHECK(cudaFree(db));
	CHECK(cudaFree(dc));
	free(a);
	free(b);
	free(c);
	if (bad) {
		printf("vector_add_rt: n=%d FAILED (%d wrong)\n", n, bad);
		return 1;
	}
	printf("vector_add_rt: n=%d OK\n", n);
	return 0;
}
