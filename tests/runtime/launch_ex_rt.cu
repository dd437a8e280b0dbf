// SPDX-License-Identifier: MIT
/*
 * launch_ex_rt: cudaLaunchKernelEx (cuda_runtime.h's template over
 * cudaLaunchKernelExC) launches like <<<>>>: grid, block, dynamic shared
 * memory and stream from the configuration, the result checked against
 * the CPU. Attributes that only hint (priority, programmatic stream
 * serialization) are accepted; a launch completion event fires; a
 * cluster of two blocks runs, and one that does not divide the grid is
 * an error; a cooperative launch runs (the attribute, and
 * cudaLaunchCooperativeKernel), and one of more blocks than the device
 * holds at once is cudaErrorCooperativeLaunchTooLarge (not sticky).
 */
#include "rt_check.h"

/* Block b reverses d[b * per_block, (b + 1) * per_block) through dynamic
 * shared memory (as func_attrs_rt.cu; twin in kernels/rt_twins_basic.c). */
__global__ void reverseChunks(int *d, int per_block)
{
	extern __shared__ int s[];
	int base = blockIdx.x * per_block;

	for (int i = threadIdx.x; i < per_block; i += blockDim.x)
		s[i] = d[base + i];
	__syncthreads();
	for (int i = threadIdx.x; i < per_block; i += blockDim.x)
		d[base + i] = s[per_block - 1 - i];
}

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failures++;
}

/* d[] of n ints reversed in chunks of per_block on the CPU? */
static int reversed(const int *h, int n, int per_block, int times)
{
	for (int i = 0; i < n; i++) {
		int c = i / per_block, k = i % per_block;
		int want = times % 2 ? c * per_block + per_block - 1 - k : i;

		if (h[i] != want)
			return 0;
	}
	return 1;
}

int main(void)
{
	const int per_block = 512, blocks = 64, n = per_block * blocks;
	cudaLaunchAttribute attrs[3];
	cudaLaunchConfig_t cfg = {};
	cudaStream_t s;
	cudaError_t err;
	cudaEvent_t done;
	void *args[2];
	int *d, *h, coop = 0;

	h = (int *)malloc(n * sizeof(int));
	if (!h)
		return 1;
	for (int i = 0; i < n; i++)
		h[i] = i;
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
	CHECK(cudaMalloc(&d, n * sizeof(int)));
	CHECK(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));

	/* plain: no attributes, on a stream */
	cfg.gridDim = dim3(blocks);
	cfg.blockDim = dim3(128);
	cfg.dynamicSmemBytes = per_block * sizeof(int);
	cfg.stream = s;
	CHECK(cudaLaunchKernelEx(&cfg, reverseChunks, d, per_block));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	expect(reversed(h, n, per_block, 1),
	       "cudaLaunchKernelEx reversed every chunk (CPU check)");

	/* hints accepted, the completion event fires */
	attrs[0].id = cudaLaunchAttributePriority;
	attrs[0].val.priority = 0;
	attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
	attrs[1].val.programmaticStreamSerializationAllowed = 1;
	attrs[2].id = cudaLaunchAttributeLaunchCompletionEvent;
	attrs[2].val.launchCompletionEvent.event = done;
	attrs[2].val.launchCompletionEvent.flags = 0;
	cfg.attrs = attrs;
	cfg.numAttrs = 3;
	CHECK(cudaLaunchKernelEx(&cfg, reverseChunks, d, per_block));
	CHECK(cudaEventSynchronize(done));
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	expect(reversed(h, n, per_block, 2),
	       "with priority, serialization and a completion event: "
	       "reversed back");

	/* cooperative: the attribute, then cudaLaunchCooperativeKernel;
	 * more blocks than the device holds at once is refused at the
	 * launch, and not sticky */
	CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
	expect(coop == 1, "cudaDevAttrCooperativeLaunch is 1");
	attrs[0].id = cudaLaunchAttributeCooperative;
	attrs[0].val.cooperative = 1;
	cfg.numAttrs = 1;
	CHECK(cudaLaunchKernelEx(&cfg, reverseChunks, d, per_block));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	expect(reversed(h, n, per_block, 3),
	       "a cooperative cudaLaunchKernelEx: reversed again");
	args[0] = &d;
	args[1] = (void *)&per_block;
	CHECK(cudaLaunchCooperativeKernel((void *)reverseChunks, dim3(blocks),
					  dim3(128), args,
					  per_block * sizeof(int), s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	expect(reversed(h, n, per_block, 4),
	       "cudaLaunchCooperativeKernel: reversed back");
	err = cudaLaunchCooperativeKernel((void *)reverseChunks, dim3(1 << 20),
					  dim3(128), args,
					  per_block * sizeof(int), s);
	printf("# a cooperative launch of 2^20 blocks: %s\n",
	       cudaGetErrorName(err));
	expect(err == cudaErrorCooperativeLaunchTooLarge,
	       "2^20 blocks at once: cudaErrorCooperativeLaunchTooLarge");
	cudaGetLastError();

	/* clusters: of two blocks it runs; a grid that is not a multiple
	 * of the cluster is refused */
	attrs[0].id = cudaLaunchAttributeClusterDimension;
	attrs[0].val.clusterDim.x = 2;
	attrs[0].val.clusterDim.y = 1;
	attrs[0].val.clusterDim.z = 1;
	CHECK(cudaLaunchKernelEx(&cfg, reverseChunks, d, per_block));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	expect(reversed(h, n, per_block, 3),
	       "in clusters of 2 blocks: reversed again");
	attrs[0].val.clusterDim.x = 3; /* 64 blocks */
	err = cudaLaunchKernelEx(&cfg, reverseChunks, d, per_block);
	printf("# clusters of 3 over 64 blocks: %s\n", cudaGetErrorName(err));
	expect(err == cudaErrorInvalidClusterSize,
	       "clusters of 3 blocks over 64: cudaErrorInvalidClusterSize "
	       "(as natively)");
	cudaGetLastError();

	/* a bad configuration is CUDA's error, and not sticky either */
	cfg.numAttrs = 0;
	cfg.blockDim = dim3(2048);
	/* (CUDA 13's runtime reports the driver's invalid value) */
	err = cudaLaunchKernelEx(&cfg, reverseChunks, d, per_block);
	expect(err == cudaErrorInvalidConfiguration ||
		       err == cudaErrorInvalidValue,
	       "2048 threads per block: cudaErrorInvalidConfiguration");
	cudaGetLastError();
	cfg.blockDim = dim3(256);
	cfg.stream = 0;
	CHECK(cudaLaunchKernelEx(&cfg, reverseChunks, d, per_block));
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	expect(reversed(h, n, per_block, 4),
	       "after the refusals, on the default stream: reversed again");

	CHECK(cudaFree(d));
	CHECK(cudaEventDestroy(done));
	CHECK(cudaStreamDestroy(s));
	free(h);
	if (failures) {
		printf("launch_ex_rt: FAILED (%d checks)\n", failures);
		return 1;
	}
	printf("launch_ex_rt: OK\n");
	return 0;
}
