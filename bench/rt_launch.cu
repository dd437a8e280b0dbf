// SPDX-License-Identifier: MIT
/*
 * rt_launch [ROUND_TRIPS [ASYNC_LAUNCHES [REPS]]]: kernel launch costs as a
 * runtime-API program sees them.
 *   sync round trip: one empty kernel + cudaDeviceSynchronize, timed one
 *     by one by the host clock, median of ROUND_TRIPS (default 5000);
 *   async launch rate: ASYNC_LAUNCHES (default 100000) empty kernels in
 *     one stream, then one synchronize; median of REPS (default 5).
 */
#include "rt_common.h"

__global__ void emptyKernel()
{
}

int main(int argc, char **argv)
{
	int trips = argc > 1 ? atoi(argv[1]) : 5000;
	int launches = argc > 2 ? atoi(argv[2]) : 100000;
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	cudaStream_t s;

	if (trips < 1 || launches < 1 || reps < 1) {
		fprintf(stderr, "usage: rt_launch [ROUND_TRIPS [ASYNC_LAUNCHES "
				"[REPS]]]\n");
		return 2;
	}
	double *t = (double *)malloc(sizeof(double) *
				     (trips > reps ? trips : reps));
	if (!t)
		return 1;
	rt_banner("rt_launch");
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (int i = 0; i < 10; i++) /* warm-up: module load, first launch */
		emptyKernel<<<1, 32>>>();
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());

	for (int i = 0; i < trips; i++) {
		double t0 = rt_now_us();

		emptyKernel<<<1, 32>>>();
		CHECK(cudaDeviceSynchronize());
		t[i] = rt_now_us() - t0;
	}
	CHECK(cudaGetLastError());
	double rtt = rt_median(t, trips);

	for (int r = 0; r < reps; r++) {
		double t0 = rt_now_us();

		for (int i = 0; i < launches; i++)
			emptyKernel<<<1, 32, 0, s>>>();
		CHECK(cudaStreamSynchronize(s));
		t[r] = launches / ((rt_now_us() - t0) / 1e6);
	}
	CHECK(cudaGetLastError());
	double rate = rt_median(t, reps);

	printf("%-44s %14s\n", "measurement", "median");
	printf("%-44s %11.2f us\n", "sync round trip (empty kernel + sync)",
	       rtt);
	printf("%-44s %11.0f /s\n", "async launch rate (one stream)", rate);
	rt_result("launch_sync_rtt", rtt, "us");
	rt_result("launch_async_rate", rate, "launches/s");
	CHECK(cudaStreamDestroy(s));
	free(t);
	return 0;
}
