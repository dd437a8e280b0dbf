/* SPDX-License-Identifier: MIT */
/*
 * C twin of compute_bound.cu: the same chain of fmaf per thread, so the
 * values written are bit-identical to the GPU's.
 */
#include "sim_fmaf.h"

#include "sim_kernel.h"

void sim_computeBound(const struct sim_block *blk, void **params)
{
	float *out = *(float *const *)params[0];
	int iters = *(const int *)params[1];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		unsigned i = blk->block_idx.x * blk->block_dim.x + tx;
		float x = (float)(i & 1023u) * 0.001f;

		for (int k = 0; k < iters; k++)
			x = sim_fmaf(x, 0.999999f, 0.000001f);
		out[i] = x;
	}
}
