// SPDX-License-Identifier: MIT
/*
 * func_attrs_rt: a kernel's attributes and occupancy, and the dynamic
 * shared memory opt-in, as a CUDA user meets them.
 *   - cudaFuncGetAttributes of a kernel with 8 KiB of static shared memory:
 *     registers > 0, a sane thread limit, sm_90 code, and (on a GPU) its
 *     static shared memory;
 *   - cudaOccupancyMaxActiveBlocksPerMultiprocessor: 1..32 blocks per SM;
 *   - a launch with 100 KiB of dynamic shared memory fails before
 *     cudaFuncSetAttribute(MaxDynamicSharedMemorySize) and works after it
 *     (each block reverses its chunk through shared memory, checked);
 *   - the opt-in is reported back, occupancy shrinks with it, and an
 *     opt-in beyond the device's limit is refused.
 */
#include <string.h>

#include "rt_check.h"

#define TILE 2048

__global__ void staticTile(float *d)
{
	__shared__ float tile[TILE];
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	tile[threadIdx.x] = d[i];
	__syncthreads();
	d[i] = tile[threadIdx.x] * 2.0f;
}

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

static int failed;

static void expect(int ok, const char *what)
{
	if (!ok) {
		printf("func_attrs_rt: FAILED: %s\n", what);
		failed = 1;
	}
}

int main(void)
{
	const int per_block = 25600, blocks = 4; /* 100 KiB per block */
	const size_t dyn = per_block * sizeof(int);
	struct cudaFuncAttributes a;
	cudaDeviceProp prop;
	int n = blocks * per_block, occ, bad = 0, *d, *h;

	CHECK(cudaGetDeviceProperties(&prop, 0));
	int simulated = strstr(prop.name, "simulated") != NULL;

	CHECK(cudaFuncGetAttributes(&a, staticTile));
	printf("# staticTile: %d registers, %zu B static shared, %d threads "
	       "max, binary %d, ptx %d\n",
	       a.numRegs, a.sharedSizeBytes, a.maxThreadsPerBlock,
	       a.binaryVersion, a.ptxVersion);
	expect(a.numRegs > 0, "numRegs > 0");
	expect(a.maxThreadsPerBlock >= 1 && a.maxThreadsPerBlock <= 1024,
	       "maxThreadsPerBlock in 1..1024");
	expect(a.binaryVersion == prop.major * 10 + prop.minor,
	       "binaryVersion is the device's compute capability");
	if (!simulated)
		expect(a.sharedSizeBytes >= TILE * sizeof(float),
		       "sharedSizeBytes counts the 8 KiB tile");

	CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, staticTile,
							     256, 0));
	printf("# staticTile occupancy at 256 threads: %d blocks/SM\n", occ);
	expect(occ >= 1 && occ <= 32, "occupancy in 1..32");

	CHECK(cudaMalloc(&d, n * sizeof(int)));
	CHECK(cudaMallocHost(&h, n * sizeof(int)));
	for (int i = 0; i < n; i++)
		h[i] = i;
	CHECK(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));

	/* without the opt-in: refused (now or at the next synchronize) */
	reverseChunks<<<blocks, 256, dyn>>>(d, per_block);
	cudaError_t e1 = cudaGetLastError();
	cudaError_t e2 = cudaDeviceSynchronize();
	cudaError_t e3 = cudaGetLastError();
	printf("# 100 KiB without opt-in: launch %s, synchronize %s\n",
	       cudaGetErrorName(e1), cudaGetErrorName(e2));
	expect(e1 != cudaSuccess || e2 != cudaSuccess,
	       "a launch above 48 KiB without the opt-in fails");
	(void)e3;
	expect(cudaGetLastError() == cudaSuccess, "the error is not sticky");
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		bad += h[i] != i;
	expect(bad == 0, "the refused launch changed nothing");

	CHECK(cudaFuncSetAttribute(reverseChunks,
				   cudaFuncAttributeMaxDynamicSharedMemorySize,
				   (int)dyn));
	reverseChunks<<<blocks, 256, dyn>>>(d, per_block);
	CHECK_LAUNCH();
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	bad = 0;
	for (int b = 0; b < blocks; b++)
		for (int i = 0; i < per_block; i++)
			bad += h[b * per_block + i] !=
			       b * per_block + per_block - 1 - i;
	expect(bad == 0, "with the opt-in, each chunk is reversed");

	CHECK(cudaFuncGetAttributes(&a, reverseChunks));
	expect(a.maxDynamicSharedSizeBytes == (int)dyn,
	       "maxDynamicSharedSizeBytes reports the opt-in");
	CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
		&occ, reverseChunks, 256, dyn));
	printf("# reverseChunks occupancy with 100 KiB: %d blocks/SM\n", occ);
	expect(occ >= 1 && occ <= 2, "100 KiB per block leaves 1-2 per SM");
	{
		/* the most dynamic shared memory that still lets 2 blocks of
		 * 256 run per SM: 2 fit with it, fewer with 1 KiB more */
		size_t avail = 0;
		cudaError_t e = cudaOccupancyAvailableDynamicSMemPerBlock(
			&avail, reverseChunks, 2, 256);

		if (e == cudaErrorNotSupported) { /* vgpu's own runtime */
			printf("# cudaOccupancyAvailableDynamicSMemPerBlock: "
			       "not in this runtime\n");
			cudaGetLastError();
		} else {
			int at = 0, above = 0;

			CHECK(e);
			CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
				&at, reverseChunks, 256, avail));
			CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
				&above, reverseChunks, 256, avail + 1024));
			printf("# 2 blocks of 256 per SM: %zu bytes of dynamic "
			       "shared memory each\n",
			       avail);
			expect(avail > 0 && at >= 2 && above < 2,
			       "cudaOccupancyAvailableDynamicSMemPerBlock: "
			       "the most that keeps 2 blocks per SM");
		}
	}
	expect(cudaFuncSetAttribute(reverseChunks,
				    cudaFuncAttributeMaxDynamicSharedMemorySize,
				    300 * 1024) != cudaSuccess,
	       "an opt-in beyond the device is refused");
	cudaGetLastError();

	CHECK(cudaFree(d));
	CHECK(cudaFreeHost(h));
	if (failed)
		return 1;
	printf("func_attrs_rt: OK\n");
	return 0;
}
