// SPDX-License-Identifier: MIT
/*
 * symbols_rt [N]: module-scope variables. A __constant__ array of weights
 * is set with cudaMemcpyToSymbol (whole, then one element at an offset);
 * a __device__ counter is zeroed through its address from
 * cudaGetSymbolAddress. A kernel scales its input by the weights and
 * atomically counts the threads that ran; the counter is read back with
 * cudaMemcpyFromSymbol and through its address, and the weights with
 * cudaMemcpyFromSymbol.
 */
#include "rt_check.h"

#define NWEIGHTS 8

__constant__ float c_rtWeights[NWEIGHTS];
__device__ unsigned int d_rtHits;

__global__ void applyWeights(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		y[i] = x[i] * c_rtWeights[i % NWEIGHTS];
		atomicAdd(&d_rtHits, 1u);
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100000;
	float w[NWEIGHTS], back[NWEIGHTS], *x, *y, *dx, *dy;
	unsigned int hits = 0, hits2 = 0, zero = 0, *dhits = NULL;
	size_t size = 0;
	int bad = 0;

	if (n <= 0) {
		fprintf(stderr, "usage: symbols_rt [N > 0]\n");
		return 2;
	}
	size_t bytes = (size_t)n * sizeof(float);
	x = (float *)malloc(bytes);
	y = (float *)malloc(bytes);
	if (!x || !y)
		return 1;
	for (int i = 0; i < n; i++)
		x[i] = (float)(i % 100) - 50.0f;
	for (int k = 0; k < NWEIGHTS; k++)
		w[k] = 0.5f * (float)(k + 1);
	CHECK(cudaMemcpyToSymbol(c_rtWeights, w, sizeof(w)));
	w[3] = -4.0f; /* one element again, at an offset */
	CHECK(cudaMemcpyToSymbol(c_rtWeights, &w[3], sizeof(float),
				 3 * sizeof(float), cudaMemcpyHostToDevice));
	CHECK(cudaMemcpyFromSymbol(back, c_rtWeights, sizeof(back)));
	for (int k = 0; k < NWEIGHTS; k++)
		if (back[k] != w[k] && bad++ < 5)
			fprintf(stderr, "weight %d reads %g, wrote %g\n", k,
				back[k], w[k]);

	CHECK(cudaGetSymbolAddress((void **)&dhits, d_rtHits));
	CHECK(cudaGetSymbolSize(&size, d_rtHits));
	if (!dhits || size != sizeof(unsigned int)) {
		fprintf(stderr, "d_rtHits: address %p, size %zu\n",
			(void *)dhits, size);
		bad++;
	}
	CHECK(cudaMemcpy(dhits, &zero, sizeof(zero), cudaMemcpyHostToDevice));

	CHECK(cudaMalloc(&dx, bytes));
	CHECK(cudaMalloc(&dy, bytes));
	CHECK(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice));
	applyWeights<<<(n + 127) / 128, 128>>>(dx, dy, n);
	CHECK_LAUNCH();
	CHECK(cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost));
	CHECK(cudaMemcpyFromSymbol(&hits, d_rtHits, sizeof(hits)));
	CHECK(cudaMemcpy(&hits2, dhits, sizeof(hits2), cudaMemcpyDeviceToHost));

	for (int i = 0; i < n; i++)
		if (y[i] != x[i] * w[i % NWEIGHTS] && bad++ < 5)
			fprintf(stderr, "y[%d] = %g, expected %g\n", i, y[i],
				x[i] * w[i % NWEIGHTS]);
	if (hits != (unsigned int)n || hits2 != hits) {
		fprintf(stderr,
			"counter: %u by symbol, %u by address, "
			"expected %d\n",
			hits, hits2, n);
		bad++;
	}
	CHECK(cudaFree(dx));
	CHECK(cudaFree(dy));
	free(x);
	free(y);
	if (bad) {
		printf("symbols_rt: n=%d FAILED (%d wrong)\n", n, bad);
		return 1;
	}
	printf("symbols_rt: n=%d OK (%u atomic increments)\n", n, hits);
	return 0;
}
