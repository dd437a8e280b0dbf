/* SPDX-License-Identifier: MIT */
/*
 * C twin of oob_write.cu: writes p[offset] far outside the vGPU's memory.
 * In the simulator this raises SIGSEGV and kills the worker process,
 * which is the point: it is how the fault path is exercised without a GPU.
 */
#include "sim_kernel.h"

void sim_oobWrite(const struct sim_block *blk, void **params)
{
	float *p = *(float *const *)params[0];
	unsigned long long offset = *(const unsigned long long *)params[1];

	if (blk->block_idx.x == 0)
		((volatile float *)p)[offset] = 1.0f;
}
