/* SPDX-License-Identifier: MIT */
/*
 * occupancy: the driver's occupancy calls as a driver-API user makes them
 * (issue 18): cuOccupancyMaxPotentialBlockSize picks, for vecAdd, a block
 * size in warp steps that no other block size beats in resident threads
 * per SM, and a grid of that many blocks per SM times the SMs; a block
 * size limit and a dynamic shared memory callback are honoured; bad
 * arguments are errors. Prints "occupancy: OK".
 */
#include "prog.h"

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	failures += !ok;
}

static size_t smem_per_thread(int block)
{
	return (size_t)block * 64; /* 64 bytes of dynamic memory a thread */
}

int main(void)
{
	int min_grid = 0, block = 0, sms = 0, warp = 0, best = 0, b, occ;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;

	prog_init(&dev);
	CHECK(cuModuleLoad(&mod, prog_cubin_path("vector_add")));
	CHECK(cuModuleGetFunction(&fn, mod, "vecAdd"));
	CHECK(cuDeviceGetAttribute(
		&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CHECK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));

	CHECK(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, fn, NULL, 0,
					       0));
	CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, block, 0));
	printf("# vecAdd: block %d, min grid %d (%d SMs, %d blocks/SM)\n",
	       block, min_grid, sms, occ);
	expect(block >= warp && block % warp == 0,
	       "a block size in warp steps");
	expect(min_grid == occ * sms, "the grid fills every SM of the slice");
	for (b = warp; b <= 1024; b += warp) {
		int o = 0;

		if (cuOccupancyMaxActiveBlocksPerMultiprocessor(&o, fn, b, 0) ==
			    CUDA_SUCCESS &&
		    o * b > best)
			best = o * b;
	}
	expect(occ * block == best, "no block size has more threads per SM");

	CHECK(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, fn, NULL, 0,
					       64));
	expect(block > 0 && block <= 64, "a block size limit of 64 is kept");
	CHECK(cuOccupancyMaxPotentialBlockSizeWithFlags(&min_grid, &block, fn,
							smem_per_thread, 0, 0,
							CU_OCCUPANCY_DEFAULT));
	CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(
		&occ, fn, block, smem_per_thread(block)));
	printf("# with 64 B of dynamic memory a thread: block %d, %d "
	       "blocks/SM\n",
	       block, occ);
	expect(block > 0 && min_grid == occ * sms,
	       "a dynamic shared memory callback is used");
	expect(cuOccupancyMaxPotentialBlockSize(NULL, &block, fn, NULL, 0, 0) ==
		       CUDA_ERROR_INVALID_VALUE,
	       "a NULL output is CUDA_ERROR_INVALID_VALUE");
	expect(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, fn, NULL, 0,
						-1) == CUDA_ERROR_INVALID_VALUE,
	       "a negative limit is CUDA_ERROR_INVALID_VALUE");

	CHECK(cuModuleUnload(mod));
	prog_fini(dev);
	printf("occupancy: %s\n", failures ? "FAILED" : "OK");
	return failures != 0;
}
