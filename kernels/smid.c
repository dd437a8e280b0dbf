/* SPDX-License-Identifier: MIT */
/* C twin of smid.cu: the block writes its simulated SM id to out[block]. */
#include "sim_kernel.h"

void sim_recordSmid(const struct sim_block *blk, void **params)
{
	unsigned *out = *(unsigned *const *)params[0];
	unsigned b = blk->block_idx.x +
		     blk->grid_dim.x * (blk->block_idx.y +
					blk->grid_dim.y * blk->block_idx.z);

	out[b] = blk->smid;
}
