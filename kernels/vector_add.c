/* SPDX-License-Identifier: MIT */
/* C twin of vector_add.cu: c[i] = a[i] + b[i] for the threads of a block. */
#include "sim_kernel.h"

void sim_vecAdd(const struct sim_block *blk, void **params)
{
	const float *a = *(const float *const *)params[0];
	const float *b = *(const float *const *)params[1];
	float *c = *(float *const *)params[2];
	int n = *(const int *)params[3];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = (int)(blk->block_idx.x * blk->block_dim.x + tx);

		if (i < n)
			c[i] = a[i] + b[i];
	}
}
