/* SPDX-License-Identifier: MIT */
/*
 * C twin of matmul_tiled.cu for one 16x16 block: the same zero padding and
 * the same fmaf accumulation in k order as the tiled kernel, so results are
 * bit-identical. The shared-memory staging becomes direct loads.
 */
#include "sim_fmaf.h"

#include "sim_kernel.h"

#define TILE 16

void sim_matmulTiled(const struct sim_block *blk, void **params)
{
	const float *A = *(const float *const *)params[0];
	const float *B = *(const float *const *)params[1];
	float *C = *(float *const *)params[2];
	int n = *(const int *)params[3];

	for (int ty = 0; ty < TILE; ty++) {
		for (int tx = 0; tx < TILE; tx++) {
			int row = (int)blk->block_idx.y * TILE + ty;
			int col = (int)blk->block_idx.x * TILE + tx;
			float sum = 0.0f;

			if (row >= n || col >= n)
				continue;
			for (int t = 0; t < n; t += TILE) {
				for (int k = 0; k < TILE; k++) {
					float a = t + k < n ? A[row * n + t + k]
							    : 0.0f;
					float b = t + k < n
							  ? B[(t + k) * n + col]
							  : 0.0f;

					sum = sim_fmaf(a, b, sum);
				}
			}
			C[row * n + col] = sum;
		}
	}
}
