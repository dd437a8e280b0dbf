/* SPDX-License-Identifier: MIT */
/* C twin of chain.cu: v[i] = v[i] * 31 + k + i for the threads of a block. */
#include "sim_kernel.h"

void sim_chainStep(const struct sim_block *blk, void **params)
{
	unsigned long long *v = *(unsigned long long *const *)params[0];
	int n = *(const int *)params[1];
	unsigned long long k = *(const unsigned long long *)params[2];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = (int)(blk->block_idx.x * blk->block_dim.x + tx);

		if (i < n)
			v[i] = v[i] * 31ull + k + (unsigned long long)i;
	}
}
