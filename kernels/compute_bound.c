/* SPDX-License-Identifier: MIT */
/*
 * C twin of compute_bound.cu: the same chain of fmaf per thread, so the
 * values written are bit-identical to the GPU's; and of
 * compute_bound_timed.cu: computeBound's values, and per block its start
 * and end on the host's monotonic clock (ns), that time again as
 * "cycles" (a notional 1 GHz) and its simulated SM.
 */
#include <time.h>

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

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull +
	       (unsigned long long)ts.tv_nsec;
}

void sim_computeBoundTimed(const struct sim_block *blk, void **params)
{
	unsigned long long *rec = *(unsigned long long *const *)params[2];
	unsigned long long t0 = now_ns(), t1;

	sim_computeBound(blk, params);
	t1 = now_ns();
	rec[4 * blk->block_idx.x + 0] = t0;
	rec[4 * blk->block_idx.x + 1] = t1;
	rec[4 * blk->block_idx.x + 2] = t1 - t0;
	rec[4 * blk->block_idx.x + 3] = blk->smid;
}
