/* SPDX-License-Identifier: MIT */
/*
 * vector_add [n]: c = a + b on the device for n random floats (default
 * 1M), checked element by element against the CPU. Loads its kernel with
 * cuModuleLoad (from a file).
 */
#include "prog.h"

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
	size_t bytes = (size_t)n * sizeof(float);
	unsigned long long seed = 1;
	unsigned int threads = 256, blocks;
	CUdeviceptr da, db, dc;
	float *a, *b, *c;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;
	int bad = 0;

	if (n <= 0) {
		fprintf(stderr, "usage: vector_add [n > 0]\n");
		return 2;
	}
	a = malloc(bytes);
	b = malloc(bytes);
	c = malloc(bytes);
	if (!a || !b || !c) {
		fprintf(stderr, "vector_add: out of host memory\n");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		a[i] = prog_rand_float(&seed);
		b[i] = prog_rand_float(&seed);
	}

	prog_init(&dev);
	CHECK(cuModuleLoad(&mod, prog_cubin_path("vector_add")));
	CHECK(cuModuleGetFunction(&fn, mod, "vecAdd"));
	CHECK(cuMemAlloc(&da, bytes));
	CHECK(cuMemAlloc(&db, bytes));
	CHECK(cuMemAlloc(&dc, bytes));
	CHECK(cuMemcpyHtoD(da, a, bytes));
	CHECK(cuMemcpyHtoD(db, b, bytes));
	CHECK(cuMemsetD32(dc, 0, n));

	void *params[] = {&da, &db, &dc, &n};
	blocks = (n + threads - 1) / threads;
	CHECK(cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, NULL, params,
			     NULL));
	CHECK(cuCtxSynchronize());
	CHECK(cuMemcpyDtoH(c, dc, bytes));

	for (int i = 0; i < n; i++) {
		if (c[i] != a[i] + b[i]) {
			if (bad++ < 5)
				fprintf(stderr, "c[%d] = %g, expected %g\n", i,
					c[i], a[i] + b[i]);
		}
	}
	CHECK(cuMemFree(da));
	CHECK(cuMemFree(db));
	CHECK(cuMemFree(dc));
	CHECK(cuModuleUnload(mod));
	prog_fini(dev);
	free(a);
	free(b);
	free(c);
	if (bad) {
		printf("vector_add: n=%d FAILED (%d wrong elements)\n", n, bad);
		return 1;
	}
	printf("vector_add: n=%d OK\n", n);
	return 0;
}
