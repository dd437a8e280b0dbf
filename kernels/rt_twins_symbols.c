/* SPDX-License-Identifier: MIT */
/*
 * C twin of applyWeights in tests/runtime/symbols_rt.cu, which reads the
 * __constant__ array c_rtWeights and counts its threads in the __device__
 * counter d_rtHits (both in sim_globals.c). Blocks run in parallel on
 * several SM threads, so the counter is added to atomically, once per
 * block with the number of threads that ran.
 */
#include "sim_kernel.h"

#define RT_NWEIGHTS 8

/* applyWeights(const float *x, float *y, int n) */
void sim_rt_applyWeights(const struct sim_block *blk, void **params)
{
	const float *x = *(const float *const *)params[0];
	float *y = *(float *const *)params[1];
	int n = *(const int *)params[2];
	const float *w = blk->global(blk, "c_rtWeights");
	unsigned int *hits = blk->global(blk, "d_rtHits");
	unsigned int ran = 0;

	if (!w || !hits)
		return; /* cannot happen: the library holds both */
	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = (int)(blk->block_idx.x * blk->block_dim.x + tx);

		if (i < n) {
			y[i] = x[i] * w[i % RT_NWEIGHTS];
			ran++;
		}
	}
	if (ran)
		__atomic_fetch_add(hits, ran, __ATOMIC_RELAXED);
}
