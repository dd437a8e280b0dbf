// SPDX-License-Identifier: MIT
/*
 * rt_copy [MAX_BYTES [REPS]]: cudaMemcpy bandwidth host to device and
 * device to host, from pinned (cudaMallocHost) and pageable (malloc) host
 * memory, for 4 KiB to MAX_BYTES (default 1 GiB) by powers of 4. Each copy
 * is timed by the host clock; the figure is the median of REPS (default:
 * 50 up to 1 MiB, 20 up to 64 MiB, 5 above) in GB/s (10^9 bytes/s).
 */
#include <string.h>

#include "rt_common.h"

#define MIN_BYTES ((size_t)4 << 10)

/* Median GB/s of reps copies of n bytes. */
static double bandwidth(void *dst, const void *src, size_t n,
			cudaMemcpyKind kind, int reps)
{
	double t[64];

	if (reps > 64)
		reps = 64;
	CHECK(cudaMemcpy(dst, src, n, kind)); /* warm-up */
	for (int r = 0; r < reps; r++) {
		double t0 = rt_now_us();

		CHECK(cudaMemcpy(dst, src, n, kind));
		t[r] = rt_now_us() - t0;
	}
	return n / (rt_median(t, reps) * 1e3);
}

static void label(char *buf, size_t len, size_t n)
{
	if (n >= (1u << 30))
		snprintf(buf, len, "%zuGiB", n >> 30);
	else if (n >= (1u << 20))
		snprintf(buf, len, "%zuMiB", n >> 20);
	else
		snprintf(buf, len, "%zuKiB", n >> 10);
}

int main(int argc, char **argv)
{
	size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)1 << 30;
	int fixed_reps = argc > 2 ? atoi(argv[2]) : 0;
	size_t pinned_max;
	void *pinned = NULL, *pageable, *dev;
	static const char *const col[4] = {"h2d_pinned", "d2h_pinned",
					   "h2d_pageable", "d2h_pageable"};

	if (max < MIN_BYTES) {
		fprintf(stderr, "usage: rt_copy [MAX_BYTES >= 4096 [REPS]]\n");
		return 2;
	}
	rt_banner("rt_copy");
	CHECK(cudaMalloc(&dev, max));
	pageable = malloc(max);
	if (!pageable) {
		fprintf(stderr, "rt_copy: cannot malloc %zu bytes\n", max);
		return 1;
	}
	memset(pageable, 1, max); /* fault it in before timing */
	/* the largest pinned buffer we can get, up to max */
	for (pinned_max = max; pinned_max >= MIN_BYTES; pinned_max /= 4) {
		if (cudaMallocHost(&pinned, pinned_max) == cudaSuccess)
			break;
		cudaGetLastError();
		pinned = NULL;
	}
	if (!pinned)
		pinned_max = 0;
	else
		memset(pinned, 1, pinned_max);
	if (pinned_max < max)
		printf("# pinned memory: only %zu bytes could be allocated\n",
		       pinned_max);

	double bw_all[16][4];
	char labels[16][32];
	int rows = 0;

	printf("%-8s %12s %12s %12s %12s   (GB/s, median)\n", "size",
	       "H2D pinned", "D2H pinned", "H2D pageable", "D2H pageable");
	for (size_t n = MIN_BYTES; n <= max && rows < 16; n *= 4) {
		int reps = fixed_reps > 0     ? fixed_reps
			   : n <= (1u << 20)  ? 50
			   : n <= (64u << 20) ? 20
					      : 5;
		double *bw = bw_all[rows];
		char *sz = labels[rows];

		bw[0] = bw[1] = -1;
		if (n <= pinned_max) {
			bw[0] = bandwidth(dev, pinned, n,
					  cudaMemcpyHostToDevice, reps);
			bw[1] = bandwidth(pinned, dev, n,
					  cudaMemcpyDeviceToHost, reps);
		}
		bw[2] = bandwidth(dev, pageable, n, cudaMemcpyHostToDevice,
				  reps);
		bw[3] = bandwidth(pageable, dev, n, cudaMemcpyDeviceToHost,
				  reps);
		label(sz, sizeof(labels[0]), n);
		printf("%-8s", sz);
		for (int c = 0; c < 4; c++) {
			if (bw[c] < 0)
				printf(" %12s", "-");
			else
				printf(" %12.3f", bw[c]);
		}
		printf("\n");
		rows++;
		if (n > max / 4)
			break; /* n * 4 would pass max (or overflow) */
	}
	for (int r = 0; r < rows; r++) {
		for (int c = 0; c < 4; c++) {
			char name[64];

			if (bw_all[r][c] < 0)
				continue;
			snprintf(name, sizeof(name), "%s_%s", col[c],
				 labels[r]);
			rt_result(name, bw_all[r][c], "GB/s");
		}
	}
	if (pinned)
		CHECK(cudaFreeHost(pinned));
	CHECK(cudaFree(dev));
	free(pageable);
	return 0;
}
