/* SPDX-License-Identifier: MIT */
/*
 * The native reference for slice fidelity: the compute-bound kernel on a
 * raw green context of the given SM groups, against NVIDIA's libcuda
 * directly (no vgpu in between). Run it under the same MPS server as the
 * workers to compare like with like.
 *
 *   raw_slice CUBIN FIRST_GROUP NGROUPS [BLOCKS ITERS LAUNCHES REPS]
 *
 * FIRST_GROUP equal to the number of groups names the SMs the split left
 * over (H100: 12), alone (NGROUPS 1), as vgpud's planner does.
 */
#include "bench_common.h"

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr,
			"usage: %s CUBIN FIRST_GROUP NGROUPS "
			"[BLOCKS ITERS LAUNCHES REPS]\n",
			argv[0]);
		return 2;
	}
	int first = atoi(argv[2]), ngroups = atoi(argv[3]);
	int blocks = argc > 4 ? atoi(argv[4]) : 1056;
	int iters = argc > 5 ? atoi(argv[5]) : 20000;
	int launches = argc > 6 ? atoi(argv[6]) : 10;
	int reps = argc > 7 ? atoi(argv[7]) : 7;
	CUdevice dev;
	CUdevResource sm, groups[64], rest, mine;
	unsigned n = 64;
	CUdevResourceDesc desc;
	CUgreenCtx gctx;
	CUcontext ctx;
	CUstream s;
	CUlibrary lib;
	CUkernel k;
	CUdeviceptr out;
	size_t len;
	void *img = bench_read_file(argv[1], &len);

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDeviceGetDevResource(dev, &sm, CU_DEV_RESOURCE_TYPE_SM));
	CHECK(cuDevSmResourceSplitByCount(groups, &n, &sm, &rest, 0,
					  sm.sm.minSmPartitionSize));
	if (first == (int)n && ngroups == 1) {
		CHECK(cuDevResourceGenerateDesc(&desc, &rest, 1));
	} else if (first < 0 || ngroups < 1 || first + ngroups > (int)n) {
		fprintf(stderr, "groups %d..%d outside the %u groups\n", first,
			first + ngroups - 1, n);
		return 2;
	} else {
		CHECK(cuDevResourceGenerateDesc(&desc, groups + first,
						ngroups));
	}
	CHECK(cuGreenCtxCreate(&gctx, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
	CHECK(cuGreenCtxGetDevResource(gctx, &mine, CU_DEV_RESOURCE_TYPE_SM));
	CHECK(cuCtxFromGreenCtx(&ctx, gctx));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuGreenCtxStreamCreate(&s, gctx, CU_STREAM_NON_BLOCKING, 0));
	CHECK(cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetKernel(&k, lib, "computeBound"));
	CHECK(cuMemAlloc(&out, (size_t)blocks * 256 * sizeof(float)));
	char label[64];
	snprintf(label, sizeof label, "raw green context %u SMs",
		 mine.sm.smCount);
	bench_compute_bound((CUfunction)k, s, out, blocks, iters, launches,
			    reps, label);
	return 0;
}
