/* SPDX-License-Identifier: MIT */
/*
 * C twin of resize_seq.cu: the chain step for the threads of a block, and
 * block 0 records the launch in log (log[0] launches, log[1 + j] the k of
 * the j-th) and its simulated SM in smids[k]. Blocks of one grid run
 * concurrently on the slice's SM threads, but only block 0 touches log and
 * smids, and launches on a stream run one after the other.
 */
#include "sim_kernel.h"

void sim_resizeSeqStep(const struct sim_block *blk, void **params)
{
	unsigned long long *v = *(unsigned long long *const *)params[0];
	int n = *(const int *)params[1];
	unsigned long long k = *(const unsigned long long *)params[2];
	unsigned long long *log = *(unsigned long long *const *)params[3];
	unsigned int *smids = *(unsigned int *const *)params[4];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = (int)(blk->block_idx.x * blk->block_dim.x + tx);

		if (i < n)
			v[i] = v[i] * 31ull + k + (unsigned long long)i;
	}
	if (blk->block_idx.x == 0 && blk->block_idx.y == 0 &&
	    blk->block_idx.z == 0) {
		unsigned long long j = log[0];

		log[1 + j] = k;
		log[0] = j + 1;
		smids[k] = blk->smid;
	}
}
