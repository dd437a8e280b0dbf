/* SPDX-License-Identifier: MIT */
/*
 * C twin of read_global.cu: out[i] = vgpuTestGlobal[i] for i < 4, the
 * variable being the storage of this kernel's library.
 */
#include <stddef.h>

#include "sim_kernel.h"

void sim_readGlobal(const struct sim_block *blk, void **params)
{
	float *out = *(float *const *)params[0];
	const float *g = blk->global(blk, "vgpuTestGlobal");

	if (!g)
		return; /* cannot happen: the library holds the variable */
	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		uint32_t i = blk->block_idx.x * blk->block_dim.x + tx;

		if (i < 4)
			out[i] = g[i];
	}
}
