/* SPDX-License-Identifier: MIT */
/* C twin of saxpy.cu: y[i] = fmaf(a, x[i], y[i]) for each thread of a block. */
#include "sim_fmaf.h"

#include "sim_kernel.h"

void sim_saxpy(const struct sim_block *blk, void **params)
{
	float a = *(const float *)params[0];
	const float *x = *(const float *const *)params[1];
	float *y = *(float *const *)params[2];
	int n = *(const int *)params[3];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = (int)(blk->block_idx.x * blk->block_dim.x + tx);

		if (i < n)
			y[i] = sim_fmaf(a, x[i], y[i]);
	}
}
