// SPDX-License-Identifier: MIT
/*
 * coop_bound_rt [SMS]: a cooperative kernel at the device's bound, as the
 * CUDA programming guide sizes one: blocks per SM from
 * cudaOccupancyMaxActiveBlocksPerMultiprocessor times the SM count. Every
 * block writes its flag, the whole grid synchronises (grid.sync()), and
 * every block then reads its neighbour's flag: all must be there, which
 * holds only when every block was resident at once. One block more than
 * the bound is cudaErrorCooperativeLaunchTooLarge, and not sticky. With
 * SMS, the device must have that many SMs (a vGPU's slice). Needs a GPU:
 * the simulator has no twin of a kernel that waits for its whole grid.
 */
#include <cooperative_groups.h>
#include <stdlib.h>

#include "rt_check.h"

namespace cg = cooperative_groups;

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failures++;
}

__global__ void gridFlags(int *flags, int *missing)
{
	cg::grid_group g = cg::this_grid();
	int b = blockIdx.x, n = gridDim.x;

	if (threadIdx.x == 0)
		((volatile int *)flags)[b] = 1;
	g.sync();
	if (threadIdx.x == 0 && ((volatile int *)flags)[(b + 1) % n] != 1)
		atomicAdd(missing, 1);
}

int main(int argc, char **argv)
{
	const int threads = 32;
	int sms, per_sm, bound, *flags, *missing, h_missing = -1, coop;
	cudaError_t err;

	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
	expect(coop == 1, "cudaDevAttrCooperativeLaunch is 1");
	if (argc > 1)
		expect(sms == atoi(argv[1]), "the device has the slice's SMs");
	CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gridFlags,
							    threads, 0));
	bound = per_sm * sms;
	printf("# %d SMs, %d blocks of %d threads per SM: a bound of %d "
	       "blocks\n",
	       sms, per_sm, threads, bound);
	CHECK(cudaMalloc((void **)&flags, (bound + 1) * sizeof(int)));
	CHECK(cudaMalloc((void **)&missing, sizeof(int)));
	CHECK(cudaMemset(flags, 0, (bound + 1) * sizeof(int)));
	CHECK(cudaMemset(missing, 0, sizeof(int)));

	void *args[] = {&flags, &missing};
	CHECK(cudaLaunchCooperativeKernel((void *)gridFlags, dim3(bound),
					  dim3(threads), args, 0, 0));
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(&h_missing, missing, sizeof(int),
			 cudaMemcpyDeviceToHost));
	expect(h_missing == 0, "all blocks of a grid at the bound met at "
			       "grid.sync()");

	err = cudaLaunchCooperativeKernel((void *)gridFlags, dim3(bound + 1),
					  dim3(threads), args, 0, 0);
	printf("# %d blocks: %s\n", bound + 1, cudaGetErrorName(err));
	expect(err == cudaErrorCooperativeLaunchTooLarge,
	       "one block more: cudaErrorCooperativeLaunchTooLarge");
	expect(cudaGetLastError() == cudaErrorCooperativeLaunchTooLarge &&
		       cudaGetLastError() == cudaSuccess,
	       "reported once, not sticky");
	CHECK(cudaMemset(missing, 0, sizeof(int)));
	CHECK(cudaLaunchCooperativeKernel((void *)gridFlags, dim3(bound),
					  dim3(threads), args, 0, 0));
	CHECK(cudaMemcpy(&h_missing, missing, sizeof(int),
			 cudaMemcpyDeviceToHost));
	expect(h_missing == 0, "the bound runs again after the refusal");
	CHECK(cudaFree(flags));
	CHECK(cudaFree(missing));
	printf("coop_bound_rt: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
