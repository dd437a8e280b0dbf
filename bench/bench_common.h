/* SPDX-License-Identifier: MIT */
/*
 * Shared by the slice benchmarks: error checking, timing and the launch of
 * the compute-bound kernel (kernels/compute_bound.cu) whose run time is
 * proportional to the SMs it gets. Both the native and the through-vgpu
 * program time the same thing: N launches then a synchronize, by the host
 * clock, so the ratio includes every cost the stack adds.
 */
#ifndef VGPU_BENCH_COMMON_H
#define VGPU_BENCH_COMMON_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                            \
	do {                                                                   \
		CUresult r_ = (call);                                          \
		if (r_ != CUDA_SUCCESS) {                                      \
			const char *n_ = "?";                                  \
			cuGetErrorName(r_, &n_);                               \
			fprintf(stderr, "%s:%d: %s failed: %s (%d)\n",         \
				__FILE__, __LINE__, #call, n_, (int)r_);       \
			exit(1);                                               \
		}                                                              \
	} while (0)

static inline double bench_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline void *bench_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	void *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(1);
	}
	buf = malloc(n);
	if (!buf || fread(buf, 1, n, f) != (size_t)n) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	*len = n;
	return buf;
}

/* Median of n doubles (sorts in place). */
static inline double bench_median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The p-quantile of n doubles, v[ceil(p * n) - 1] once sorted (sorts
 * them in place); 0 for none. */
static inline double bench_quantile(double *v, int n, double p)
{
	int i;

	if (n <= 0)
		return 0;
	qsort(v, n, sizeof(*v), bench_cmp_double);
	i = (int)(p * n); /* ceil(p * n) - 1, without libm */
	if ((double)i == p * n)
		i--;
	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/*
 * Times `reps` rounds of `launches` computeBound launches + a stream
 * synchronize; prints and returns the median milliseconds per kernel.
 */
static inline double bench_compute_bound(CUfunction fn, CUstream s,
					 CUdeviceptr out, int blocks, int iters,
					 int launches, int reps,
					 const char *label)
{
	void *args[] = {&out, &iters};
	double t[64];

	if (reps > 64)
		reps = 64;
	/* warm-up: module load and first-launch costs stay out */
	CHECK(cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, s, args, NULL));
	CHECK(cuStreamSynchronize(s));
	for (int r = 0; r < reps; r++) {
		double t0 = bench_now_ms();

		for (int i = 0; i < launches; i++)
			CHECK(cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, s,
					     args, NULL));
		CHECK(cuStreamSynchronize(s));
		t[r] = (bench_now_ms() - t0) / launches;
	}
	double med = bench_median(t, reps);
	printf("%s: %.4f ms/kernel (median of %d x %d launches, %d blocks, "
	       "%d iters)\n",
	       label, med, reps, launches, blocks, iters);
	printf("ms_per_kernel %.4f\n", med); /* for scripts */
	return med;
}

#endif
