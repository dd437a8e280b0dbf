// SPDX-License-Identifier: MIT
/*
 * Shared by the runtime-API benchmarks (rt_*.cu): error checking, the host
 * clock, medians, the device banner and the machine-readable result line
 *   RESULT name=NAME value=VALUE unit=UNIT
 * that scripts/rt-bench.sh reads. The same binary, with NVIDIA's
 * libcudart.so.13, runs natively and on a vGPU (over our libcuda.so.1).
 */
#ifndef VGPU_RT_COMMON_H
#define VGPU_RT_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* CHECK(call): the runtime tests' own (one definition) */
#include "../tests/runtime/rt_check.h"

static inline double rt_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int rt_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of n doubles (sorts them). */
static inline double rt_median(double *v, int n)
{
	qsort(v, n, sizeof(*v), rt_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline void rt_result(const char *name, double value, const char *unit)
{
	printf("RESULT name=%s value=%.6g unit=%s\n", name, value, unit);
}

/* "# device: NAME (N SMs, M MiB)" on stdout, and a warm-up (context). */
static inline void rt_banner(const char *bench)
{
	cudaDeviceProp p;

	CHECK(cudaFree(0));
	CHECK(cudaGetDeviceProperties(&p, 0));
	printf("# %s on %s (%d SMs, %zu MiB)\n", bench, p.name,
	       p.multiProcessorCount, p.totalGlobalMem >> 20);
}

#endif
